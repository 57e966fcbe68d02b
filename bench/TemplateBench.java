import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Json;
import dev.runway.workflow.JsonTemplate;
import java.util.Arrays;
import java.util.Map;

/**
 * Evaluating a compiled template, the work a step does per call: a body of four expressions (a
 * number kept as a number, a field of an earlier step's output, text with two expressions, a list
 * built by map) over a run's inputs and steps. Prints the median and p99 of 20 rounds of 10,000
 * evaluations each, after 50,000 of warm-up.
 *
 *   mvn -B -q -DskipTests package && java -cp target/runway.jar bench/TemplateBench.java
 */
public class TemplateBench {
  public static void main(String[] args) {
    JsonTemplate body = JsonTemplate.compile(Json.tree("""
        {"n": "{{ inputs.n + 1 }}", "tier": "{{ steps.lookup.output.tier }}",
         "text": "Hello {{ inputs.name }}, {{ size(steps.lookup.output.orders) }} orders",
         "ids": "{{ steps.lookup.output.orders.map(o, o.id) }}"}
        """), "body");
    Map<String, JsonNode> vars = Map.of(
        "inputs", Json.tree("{\"n\": 41, \"name\": \"Ann\"}"),
        "steps", Json.tree("{\"lookup\": {\"status\": \"succeeded\", \"output\": {\"tier\": \"gold\", "
            + "\"orders\": [{\"id\": 7}, {\"id\": 9}, {\"id\": 12}]}}}"),
        "run", Json.tree("{\"id\": \"run_1\", \"project\": \"p\", \"workflow\": \"w\"}"));
    System.out.println("result: " + body.evaluate(vars));
    for (int i = 0; i < 50_000; i++) {
      body.evaluate(vars);
    }
    double[] perRound = new double[20];
    for (int r = 0; r < perRound.length; r++) {
      long t0 = System.nanoTime();
      for (int i = 0; i < 10_000; i++) {
        body.evaluate(vars);
      }
      perRound[r] = (System.nanoTime() - t0) / 10_000 / 1000.0;
    }
    Arrays.sort(perRound);
    System.out.printf("evaluate a 4-expression body: median %.1f us, worst round %.1f us per evaluation%n",
        perRound[perRound.length / 2], perRound[perRound.length - 1]);
  }
}
