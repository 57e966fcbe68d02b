package dev.runway.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Assumptions;
import org.openqa.selenium.By;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The console in a real headless Chromium (Debian's chromium and chromedriver, paths set so that
 * nothing is downloaded): sign up, make a key, use it from a real HTTP client to define a workflow
 * and start a run, see the run, approve it, revoke the key, sign out; go from a parallel step's run to
 * each of its child runs and back; from the workflows page to a workflow's next scheduled time. Pictures of the pages go to
 * target/console-screenshots (docs/console/ holds the committed copies; see docs/development.md). Without
 * Chromium the test is skipped, with a line saying so.
 */
class ConsoleBrowserTest {
  private static final String CHROMIUM = env("RUNWAY_TEST_CHROMIUM", "/usr/bin/chromium");
  private static final String CHROMEDRIVER = env("RUNWAY_TEST_CHROMEDRIVER", "/usr/bin/chromedriver");
  private static final Path SCREENSHOTS = Path.of("target", "console-screenshots");
  private static final Duration WAIT = Duration.ofSeconds(15);
  private static boolean told;

  private static String env(String name, String fallback) {
    String value = System.getenv(name);
    return value == null || value.isBlank() ? fallback : value;
  }

  private static synchronized void requireChromium() {
    boolean present = Files.isExecutable(Path.of(CHROMIUM)) && Files.isExecutable(Path.of(CHROMEDRIVER));
    if (!present && !told) {
      told = true;
      System.out.println("\n*** Chromium or chromedriver is missing (" + CHROMIUM + ", " + CHROMEDRIVER
          + "): SKIPPING the console's browser tests (apt-get install chromium chromium-driver) ***\n");
    }
    Assumptions.assumeTrue(present, "Chromium is not installed");
  }

  private static WebDriver chromium() {
    ChromeOptions options = new ChromeOptions();
    options.setBinary(CHROMIUM);
    options.addArguments("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
        "--window-size=1280,900");
    ChromeDriverService service = new ChromeDriverService.Builder().usingDriverExecutable(new File(CHROMEDRIVER))
        .usingAnyFreePort().build();
    return new ChromeDriver(service, options);
  }

  private static void screenshot(WebDriver driver, String name) throws IOException {
    Files.createDirectories(SCREENSHOTS);
    byte[] png = ((org.openqa.selenium.TakesScreenshot) driver).getScreenshotAs(OutputType.BYTES);
    Files.write(SCREENSHOTS.resolve(name + ".png"), png);
  }

  @BothDatabases
  void a_person_signs_up_makes_a_key_uses_it_approves_a_run_revokes_the_key_and_signs_out(Api api) {
    requireChromium();
    api.test(http -> {
      WebDriver driver = chromium();
      WebDriverWait wait = new WebDriverWait(driver, WAIT);
      try {
        String origin = http.origin();
        driver.get(origin + "/console");
        wait.until(ExpectedConditions.urlContains("/console/signin"));
        screenshot(driver, "signin");

        driver.findElement(By.linkText("Sign up")).click();
        wait.until(ExpectedConditions.urlContains("/console/signup"));
        String email = "browser-" + UUID.randomUUID().toString().substring(0, 8) + "@example.com";
        driver.findElement(By.id("email")).sendKeys(email);
        driver.findElement(By.id("password")).sendKeys("a long and uncommon passphrase");
        screenshot(driver, "signup");
        driver.findElement(By.cssSelector("form[action='/console/signup'] button[type=submit]")).click();
        wait.until(ExpectedConditions.urlContains("/console/signin"));
        driver.findElement(By.id("email")).sendKeys(email);
        driver.findElement(By.id("password")).sendKeys("a long and uncommon passphrase");
        driver.findElement(By.cssSelector("form[action='/console/signin'] button[type=submit]")).click();
        wait.until(ExpectedConditions.urlContains("/console/keys"));
        assertTrue(driver.findElement(By.cssSelector(".who")).getText().contains(email));

        // A key with the default scopes (all but admin and secrets:use).
        driver.findElement(By.id("name")).sendKeys("deploy bot");
        driver.findElement(By.cssSelector("form[action='/console/keys'] button[type=submit]")).click();
        WebElement shown = wait.until(ExpectedConditions.visibilityOfElementLocated(By.id("new-key")));
        String key = shown.getText().strip();
        assertTrue(key.matches("wsk_[0-9A-Za-z]{40,}"), key);
        assertTrue(driver.findElement(By.id("curl")).getText().contains(key));
        screenshot(driver, "key-created");

        // The key from a real HTTP client: a workflow that waits for approval, and a run of it.
        Http.Reply put = http.send("PUT", "/v1/workflows/review", key,
            "{\"name\":\"Review\",\"requires_approval\":true,\"steps\":[]}", "application/json");
        assertEquals(201, put.status(), put::toString);
        Http.Reply started = http.post("/v1/workflows/review/runs", key, "{\"project\":\"demo\"}");
        assertEquals(200, started.status(), started::toString);
        String run = started.json().get("id").asText();

        driver.findElement(By.linkText("Runs")).click();
        wait.until(ExpectedConditions.presenceOfElementLocated(By.linkText(run)));
        screenshot(driver, "runs");
        driver.findElement(By.linkText(run)).click();
        wait.until(ExpectedConditions.textToBePresentInElementLocated(By.tagName("h1"), "awaiting approval"));
        driver.findElement(By.id("comment")).sendKeys("ship it");
        screenshot(driver, "run-awaiting-approval");
        driver.findElement(By.xpath("//button[text()='Approve']")).click();
        wait.until(ExpectedConditions.textToBePresentInElementLocated(By.cssSelector("table.events"), "run.approved"));
        assertFalse(driver.findElement(By.tagName("h1")).getText().contains("awaiting approval"));
        assertEquals("approved", http.get("/v1/runs/" + run, key).json().get("approval").get("status").asText());

        // Revoke the key: /v1 refuses it.
        driver.findElement(By.linkText("API keys")).click();
        wait.until(ExpectedConditions.urlContains("/console/keys"));
        driver.findElement(By.linkText("Revoke")).click();
        wait.until(ExpectedConditions.textToBePresentInElementLocated(By.tagName("h1"), "Revoke this key?"));
        driver.findElement(By.xpath("//button[text()='Revoke key']")).click();
        wait.until(ExpectedConditions.visibilityOfElementLocated(By.cssSelector(".notice")));
        screenshot(driver, "keys");
        assertEquals(401, http.get("/v1/runs", key).status());

        driver.findElement(By.xpath("//button[text()='Sign out']")).click();
        wait.until(ExpectedConditions.urlContains("/console/signin"));
        driver.get(origin + "/console/keys");
        wait.until(ExpectedConditions.urlContains("/console/signin"));
      } finally {
        driver.quit();
      }
    });
  }

  @BothDatabases
  void a_runs_page_links_each_iteration_and_each_links_back(Api api) {
    requireChromium();
    api.test(http -> {
      assertEquals(201, http.put("/v1/workflows/fan-out", """
          {"steps":[{"id":"both","type":"parallel","branches":[[{"type":"approval"}],[{"type":"approval"}]]}]}""")
          .status());
      Http.Reply started = http.post("/v1/workflows/fan-out/runs", "{\"project\":\"demo\"}");
      assertEquals(200, started.status(), started::toString);
      String run = started.json().get("id").asText();
      java.util.List<String> branches = new java.util.ArrayList<>();
      http.get("/v1/runs?parent_run_id=" + run).json().get("data").forEach(r -> branches.add(r.get("id").asText()));
      assertEquals(2, branches.size());
      String email = ConsoleRunsTest.signUpOwner(api, http);
      WebDriver driver = chromium();
      WebDriverWait wait = new WebDriverWait(driver, WAIT);
      try {
        signIn(driver, wait, http.origin(), email);

        driver.get(http.origin() + "/console/runs/" + run);
        wait.until(ExpectedConditions.textToBePresentInElementLocated(By.tagName("h1"), run));
        driver.findElement(By.linkText("iterations")).click();
        wait.until(ExpectedConditions.urlContains("#child-runs"));
        WebElement children = driver.findElement(By.cssSelector("table.children"));
        for (String branch : branches) {
          assertTrue(children.getText().contains(branch), children.getText());
        }
        screenshot(driver, "run-child-runs");
        for (String branch : branches) {
          driver.findElement(By.cssSelector("table.children")).findElement(By.linkText(branch)).click();
          wait.until(ExpectedConditions.textToBePresentInElementLocated(By.tagName("h1"), branch));
          assertTrue(driver.findElement(By.tagName("h1")).getText().contains("awaiting approval"));
          driver.findElement(By.linkText(run)).click(); // Started by
          wait.until(ExpectedConditions.textToBePresentInElementLocated(By.tagName("h1"), run));
        }
      } finally {
        driver.quit();
      }
    });
  }

  @BothDatabases
  void a_run_waiting_for_a_signal_takes_it_from_the_run_page(Api api) {
    requireChromium();
    api.test(http -> {
      assertEquals(201, http.put("/v1/workflows/await-payment", """
          {"steps":[{"id":"pay","type":"wait","signal":"payment_received","timeout_s":3600}]}""").status());
      Http.Reply started = http.post("/v1/workflows/await-payment/runs", "{\"project\":\"demo\"}");
      assertEquals(200, started.status(), started::toString);
      String run = started.json().get("id").asText();
      String email = ConsoleRunsTest.signUpOwner(api, http);
      WebDriver driver = chromium();
      WebDriverWait wait = new WebDriverWait(driver, WAIT);
      try {
        signIn(driver, wait, http.origin(), email);
        driver.get(http.origin() + "/console/runs/" + run);
        wait.until(ExpectedConditions.textToBePresentInElementLocated(By.tagName("h1"), run));
        assertTrue(driver.getPageSource().contains("Waiting for signal"), driver::getPageSource);
        driver.findElement(By.id("signal-body")).sendKeys("{\"amount\": 4200}");
        screenshot(driver, "run-waiting-for-signal");
        driver.findElement(By.xpath("//button[text()='Send signal']")).click();
        wait.until(ExpectedConditions.textToBePresentInElementLocated(By.tagName("h1"), "succeeded"));
        wait.until(ExpectedConditions.textToBePresentInElementLocated(By.cssSelector("table.events"),
            "run.signal_received"));
        assertEquals(4200, http.get("/v1/runs/" + run).json().get("steps").get(0).get("output").get("amount").asInt());
      } finally {
        driver.quit();
      }
    });
  }

  /**
   * A streamed agent answer shows on the run's page as it comes, before the run ends; then the page
   * shows the stored answer. The usage page shows the agent's tokens.
   */
  @BothDatabases
  void a_streamed_answer_shows_on_the_run_page_as_it_comes_and_usage_shows_its_tokens(Api api) throws Exception {
    requireChromium();
    String answer = "Your parcel left the depot this morning and reaches you on Monday before noon.";
    try (dev.runway.support.FakeModel model = dev.runway.support.FakeModel.start();
        dev.runway.engine.Engine engine = api.database().startEngine(s -> s.with("agents.model.base_url",
            model.baseUrl()).with("agents.model.api_key", "sk-test"))) {
      model.script(dev.runway.support.FakeModel.Reply.text(answer).usage(120, 30).chunkGap(Duration.ofMillis(300)));
      api.test(http -> {
        assertEquals(201, http.put("/v1/agents/courier", "{\"model\":\"test-model\"}").status());
        String email = ConsoleRunsTest.signUpOwner(api, http);
        WebDriver driver = chromium();
        WebDriverWait wait = new WebDriverWait(driver, WAIT);
        try {
          signIn(driver, wait, http.origin(), email);
          Http.Reply started = http.post("/v1/agents/courier/runs", "{\"project\":\"demo\",\"input\":\"Where?\","
              + "\"stream\":true}");
          String run = started.json().get("id").asText();
          dev.runway.support.Runs.await(http, run, "the answer streaming", r -> http.get("/v1/runs/" + run
              + "/events?limit=1000").body().contains("run.message.delta"));
          driver.get(http.origin() + "/console/runs/" + run);
          WebElement live = wait.until(ExpectedConditions.visibilityOfElementLocated(By.id("live")));
          String shown = live.findElement(By.className("text")).getText();
          assertTrue(!shown.isEmpty() && answer.startsWith(shown.strip()), "a part of the answer: '" + shown + "'");
          assertEquals("running", http.get("/v1/runs/" + run).json().get("status").asText(),
              "the text showed before the run ended");
          screenshot(driver, "run-streaming");
          wait.until(ExpectedConditions.textToBePresentInElementLocated(By.tagName("h1"), "succeeded"));
          assertTrue(driver.findElement(By.cssSelector("ol.transcript")).getText().contains(answer));
          driver.findElement(By.linkText("Usage")).click();
          wait.until(ExpectedConditions.urlContains("/console/usage"));
          assertTrue(driver.findElement(By.cssSelector("table.usage-agents")).getText().contains("courier 150 150 150"),
              driver::getPageSource);
          screenshot(driver, "usage");
        } finally {
          driver.quit();
        }
      });
    }
  }

  /** Signs the owner made by ConsoleRunsTest.signUpOwner in, on the console's sign-in page. */
  private static void signIn(WebDriver driver, WebDriverWait wait, String origin, String email) {
    driver.get(origin + "/console/signin");
    driver.findElement(By.id("email")).sendKeys(email);
    driver.findElement(By.id("password")).sendKeys(ConsoleRunsTest.PASSWORD);
    driver.findElement(By.cssSelector("form[action='/console/signin'] button[type=submit]")).click();
    wait.until(ExpectedConditions.urlContains("/console/keys"));
  }

  @BothDatabases
  void the_workflows_page_leads_to_a_workflows_next_scheduled_time_and_hook_url(Api api) {
    requireChromium();
    api.test(http -> {
      assertEquals(201, http.put("/v1/workflows/nightly", """
          {"name": "Nightly report", "steps": [{"id": "wait", "type": "delay", "seconds": 1}],
           "triggers": [{"schedule": {"cron": "0 2 * * *", "timezone": "Europe/Paris"}, "project": "reports"},
                        {"crm": "contacts", "on": ["created"]},
                        {"webhook": {"verify": "none"}, "project": "forms"}]}""").status());
      JsonNode triggers = http.get("/v1/workflows/nightly").json().get("triggers");
      String next = triggers.get(0).get("next_run_at").asText();
      String hookPath = java.net.URI.create(triggers.get(2).get("hook_url").asText()).getPath();
      String shown = Views.time(java.time.Instant.parse(next));
      String email = ConsoleRunsTest.signUpOwner(api, http);
      WebDriver driver = chromium();
      WebDriverWait wait = new WebDriverWait(driver, WAIT);
      try {
        signIn(driver, wait, http.origin(), email);

        driver.findElement(By.linkText("Workflows and agents")).click();
        wait.until(ExpectedConditions.presenceOfElementLocated(By.linkText("nightly")));
        driver.findElement(By.linkText("nightly")).click();
        wait.until(ExpectedConditions.textToBePresentInElementLocated(By.tagName("h1"), "nightly"));
        WebElement schedule = driver.findElement(By.cssSelector("table.schedules"));
        assertTrue(schedule.getText().contains("0 2 * * * in Europe/Paris"), schedule.getText());
        assertEquals(shown, schedule.findElement(By.cssSelector("td.next-run")).getText());
        assertTrue(driver.findElement(By.cssSelector("table.record-triggers")).getText().contains("contacts"));
        String hookUrl = driver.findElement(By.cssSelector("table.hooks td.hook-url")).getText();
        assertTrue(hookUrl.endsWith(hookPath), hookUrl);
        screenshot(driver, "workflow");
      } finally {
        driver.quit();
      }
    });
  }
}
