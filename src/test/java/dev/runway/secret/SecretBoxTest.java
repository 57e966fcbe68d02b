package dev.runway.secret;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.ServerSettings;
import dev.runway.config.Settings;
import dev.runway.config.SettingsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Base64;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SecretBoxTest {
  private static final String KEY = Base64.getEncoder().encodeToString(new byte[32]);
  private static final String OTHER_KEY = Base64.getEncoder().encodeToString("0123456789abcdef0123456789abcdef".getBytes());

  @Test
  void a_value_comes_back_only_for_its_workspace_and_name(@TempDir Path dir) throws Exception {
    SecretBox box = SecretBox.load(KEY, dir.resolve("unused"));
    String sealed = box.encrypt("ws", "TOKEN", "s3cret value");
    assertTrue(sealed.startsWith("v1." + box.keyId() + "."), sealed);
    assertFalse(sealed.contains("s3cret"));
    assertNotEquals(sealed, box.encrypt("ws", "TOKEN", "s3cret value"), "a fresh nonce each time");
    assertEquals("s3cret value", box.decrypt("ws", "TOKEN", sealed));
    assertThrows(SecretBox.Unreadable.class, () -> box.decrypt("ws", "OTHER", sealed), "moved to another name");
    assertThrows(SecretBox.Unreadable.class, () -> box.decrypt("ws2", "TOKEN", sealed), "moved to another workspace");
    String tampered = sealed.substring(0, sealed.length() - 4) + (sealed.endsWith("AAAA") ? "BBBB" : "AAAA");
    assertThrows(SecretBox.Unreadable.class, () -> box.decrypt("ws", "TOKEN", tampered));
    assertFalse(Files.exists(dir.resolve("unused")), "a configured key writes no file");
  }

  @Test
  void a_server_with_another_key_says_so_naming_both_keys_but_no_value(@TempDir Path dir) throws Exception {
    String sealed = SecretBox.load(KEY, dir.resolve("a")).encrypt("ws", "TOKEN", "s3cret");
    SecretBox other = SecretBox.load(OTHER_KEY, dir.resolve("b"));
    SecretBox.Unreadable e = assertThrows(SecretBox.Unreadable.class, () -> other.decrypt("ws", "TOKEN", sealed));
    assertTrue(e.getMessage().contains(other.keyId()) && e.getMessage().contains("same secrets.key"), e.getMessage());
    assertFalse(e.getMessage().contains("s3cret") || e.getMessage().contains(OTHER_KEY));
  }

  @Test
  void without_a_configured_key_one_is_made_in_the_key_file_readable_by_its_owner_alone(@TempDir Path dir)
      throws Exception {
    Path file = dir.resolve("data").resolve("secrets.key");
    SecretBox first = SecretBox.load("", file);
    assertTrue(Files.exists(file));
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
    assertEquals(32, Base64.getDecoder().decode(Files.readString(file).trim()).length);
    SecretBox again = SecretBox.load("", file);
    assertEquals(first.keyId(), again.keyId(), "the file's key is used from then on");
    assertEquals("v", again.decrypt("ws", "N", first.encrypt("ws", "N", "v")));
  }

  @Test
  void a_configured_key_that_is_not_32_bytes_of_base64_stops_start_up_without_showing_it() {
    for (String bad : new String[] {"not base64!", Base64.getEncoder().encodeToString(new byte[16])}) {
      SettingsException e = assertThrows(SettingsException.class,
          () -> ServerSettings.from(Settings.defaults().with("secrets.key", bad)));
      assertTrue(e.getMessage().contains("secrets.key") && e.getMessage().contains("(hidden)"), e.getMessage());
      assertFalse(e.getMessage().contains(bad), e.getMessage());
    }
  }
}
