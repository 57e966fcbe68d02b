package dev.runway;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class CrmSyncPathTest {
  @Test
  void crm_sync_paths_are_told_apart_as_the_pattern_would() {
    Pattern sync = Pattern.compile("/v1/crm/[^/]+/records/sync");
    for (String path : new String[] {"/v1/crm/contacts/records/sync", "/v1/crm/a/records/sync", "/v1/crm//records/sync",
        "/v1/crm/a/b/records/sync", "/v1/crm/records/sync", "/v1/crm/contacts/records/sync/", "/v1/crm/contacts/records",
        "/v1/crm/contacts/records/syncs", "/v2/crm/contacts/records/sync", "/v1/crm/x/records/sync/records/sync", "/",
        "/v1/workflows/noop/runs", "/v1/crm/contacts%2Fx/records/sync"}) {
      assertEquals(sync.matcher(path).matches(), RunwayApp.isCrmSync(path), path);
    }
  }
}
