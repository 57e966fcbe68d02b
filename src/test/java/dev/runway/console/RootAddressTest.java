package dev.runway.console;

import static dev.runway.support.Problems.assertProblem;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.runway.support.Api;
import dev.runway.support.Browser;
import dev.runway.support.BothDatabases;

/** The server's bare address, opened in a browser, leads to the console. */
class RootAddressTest {
  @BothDatabases
  void get_root_redirects_to_the_console_and_unknown_api_paths_stay_json_404(Api api) {
    api.test(http -> {
      Browser browser = new Browser(http.origin());
      Browser.Page root = browser.get("/");
      assertEquals(302, root.status(), root::toString);
      assertEquals("/console", root.header("Location"));
      assertEquals(200, browser.get("/console/signin").status());

      assertProblem(http.get("/v1/nothing-here"), 404, "not_found");
    });
  }
}
