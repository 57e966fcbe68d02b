package dev.runway.support;

import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.Extension;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.junit.jupiter.api.extension.TestTemplateInvocationContext;
import org.junit.jupiter.api.extension.TestTemplateInvocationContextProvider;

/** Provides the H2 and PostgreSQL invocations of a {@link BothDatabases} test. */
public final class BothDatabasesExtension implements TestTemplateInvocationContextProvider {
  private static volatile Boolean postgresReachable;

  @Override
  public boolean supportsTestTemplate(ExtensionContext context) {
    return true;
  }

  @Override
  public Stream<TestTemplateInvocationContext> provideTestTemplateInvocationContexts(ExtensionContext context) {
    return Stream.of(TestDatabase.values()).map(Invocation::new);
  }

  static synchronized boolean postgresAvailable() {
    if (postgresReachable == null) {
      String problem = TestDatabase.postgresProblem();
      postgresReachable = problem == null;
      if (!postgresReachable) {
        String line = "PostgreSQL at " + TestDatabase.PG_URL + ": " + problem + (TestDatabase.PG_REQUIRED
            ? "; RUNWAY_TEST_PG_REQUIRED=true: PostgreSQL tests FAIL" : ": SKIPPING every PostgreSQL test");
        System.out.println("\n*** " + line + " ***\n");
      }
    }
    return postgresReachable;
  }

  private record Invocation(TestDatabase database) implements TestTemplateInvocationContext {
    @Override
    public String getDisplayName(int invocationIndex) {
      return "[" + database.label() + "]";
    }

    @Override
    public List<Extension> getAdditionalExtensions() {
      ExecutionCondition skipWithoutPostgres = context -> {
        if (database != TestDatabase.POSTGRESQL || postgresAvailable() || TestDatabase.PG_REQUIRED) {
          return ConditionEvaluationResult.enabled("database available");
        }
        return ConditionEvaluationResult.disabled("PostgreSQL not reachable at " + TestDatabase.PG_URL);
      };
      ParameterResolver api = new ParameterResolver() {
        @Override
        public boolean supportsParameter(ParameterContext p, ExtensionContext e) {
          return p.getParameter().getType() == Api.class || p.getParameter().getType() == TestDatabase.class;
        }

        @Override
        public Object resolveParameter(ParameterContext p, ExtensionContext e) {
          return p.getParameter().getType() == TestDatabase.class ? database : new Api(database);
        }
      };
      // The runs earlier tests of this JVM left due (API tests run without an engine, so their runs stay
      // where their start left them) are parked: an engine this test starts would otherwise take them
      // up and send their model calls to this test's scripted fake model, which answers in order.
      BeforeEachCallback parkEarlierRuns = context -> database.parkEarlierRuns();
      return List.of(skipWithoutPostgres, parkEarlierRuns, api);
    }
  }
}
