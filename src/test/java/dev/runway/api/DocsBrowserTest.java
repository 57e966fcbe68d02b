package dev.runway.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.support.Api;
import dev.runway.support.OpenApiContract;
import dev.runway.support.TestDatabase;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.logging.Level;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.logging.LogEntry;
import org.openqa.selenium.logging.LogType;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The reference page at /docs in a real headless Chromium (as ConsoleBrowserTest: Debian's
 * chromium and chromedriver, skipped without them): Swagger UI renders every operation of the
 * document under the page's Content-Security-Policy, which allows only this server, and the browser
 * reports no error (a blocked request to another host, an inline script, a failed load).
 */
class DocsBrowserTest {
  private static final String CHROMIUM = env("RUNWAY_TEST_CHROMIUM", "/usr/bin/chromium");
  private static final String CHROMEDRIVER = env("RUNWAY_TEST_CHROMEDRIVER", "/usr/bin/chromedriver");

  private static String env(String name, String fallback) {
    String value = System.getenv(name);
    return value == null || value.isBlank() ? fallback : value;
  }

  @Test
  void swagger_ui_renders_every_operation_under_a_self_only_policy() {
    boolean present = Files.isExecutable(Path.of(CHROMIUM)) && Files.isExecutable(Path.of(CHROMEDRIVER));
    if (!present) {
      System.out.println("\n*** Chromium or chromedriver is missing (" + CHROMIUM + ", " + CHROMEDRIVER
          + "): SKIPPING the reference page's browser test ***\n");
    }
    Assumptions.assumeTrue(present, "Chromium is not installed");
    int operations = OpenApiContract.get().operations().size();
    Api.on(TestDatabase.H2).test(http -> {
      ChromeOptions options = new ChromeOptions();
      options.setBinary(CHROMIUM);
      options.addArguments("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
          "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
          "--window-size=1280,900");
      options.setCapability("goog:loggingPrefs", Map.of(LogType.BROWSER, "ALL"));
      ChromeDriverService service = new ChromeDriverService.Builder().usingDriverExecutable(new File(CHROMEDRIVER))
          .usingAnyFreePort().build();
      WebDriver driver = new ChromeDriver(service, options);
      try {
        driver.get(http.origin() + "/docs");
        new WebDriverWait(driver, Duration.ofSeconds(30))
            .until(d -> d.findElements(By.cssSelector(".opblock")).size() == operations);
        assertEquals("Runway API", driver.findElement(By.cssSelector(".info .title")).getText().split("\\R")[0]
            .replaceAll("\\s*v1.*$", "").strip());
        Path shots = Path.of("target", "docs-screenshots");
        Files.createDirectories(shots);
        Files.write(shots.resolve("docs.png"), ((TakesScreenshot) driver).getScreenshotAs(OutputType.BYTES));
        List<LogEntry> errors = driver.manage().logs().get(LogType.BROWSER).getAll().stream()
            .filter(e -> e.getLevel().intValue() >= Level.WARNING.intValue()
                || e.getMessage().contains("Content Security Policy"))
            .toList();
        assertTrue(errors.isEmpty(), () -> "the browser reported: " + errors);
      } finally {
        driver.quit();
      }
    });
  }
}
