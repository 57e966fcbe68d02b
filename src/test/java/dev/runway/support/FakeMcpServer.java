package dev.runway.support;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.modelcontextprotocol.json.jackson2.JacksonMcpJsonMapper;
import io.modelcontextprotocol.json.schema.JsonSchemaValidator;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpServerFeatures;
import io.modelcontextprotocol.server.McpSyncServer;
import io.modelcontextprotocol.server.transport.HttpServletStreamableServerTransportProvider;
import io.modelcontextprotocol.spec.McpError;
import io.modelcontextprotocol.spec.McpSchema;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.http.HttpServletRequest;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

/**
 * An MCP server made with the official MCP Java SDK (its Streamable HTTP servlet, which answers
 * requests as SSE streams and keeps sessions), on an embedded Jetty on 127.0.0.1, a free port, at
 * /mcp. It records every tool call (name, arguments) and the headers of every request. Tools can
 * be added and removed while it runs; {@link #hang} holds a tool's calls until released.
 */
public final class FakeMcpServer implements AutoCloseable {
  /** One call of a tool: its name and arguments, and the Authorization header of the request that made it. */
  public record ToolCall(String name, Map<String, Object> arguments) {}

  private static final String ANY_OBJECT = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}}}";

  private final Server jetty;
  private final McpSyncServer mcp;
  private final JacksonMcpJsonMapper json = new JacksonMcpJsonMapper(new ObjectMapper());
  private final List<ToolCall> calls = Collections.synchronizedList(new ArrayList<>());
  private final List<Map<String, String>> requests = Collections.synchronizedList(new ArrayList<>());
  private final Map<String, CountDownLatch> held = Collections.synchronizedMap(new HashMap<>());

  private FakeMcpServer() {
    HttpServletStreamableServerTransportProvider transport = HttpServletStreamableServerTransportProvider.builder()
        .jsonMapper(json).mcpEndpoint("/mcp").build();
    // The SDK's own schema validator needs a json-schema-validator 2 beside Runway's 1.5: none here.
    mcp = McpServer.sync(transport).serverInfo("fake-mcp", "1.0").jsonMapper(json)
        .jsonSchemaValidator((schema, content) -> JsonSchemaValidator.ValidationResponse.asValid(null))
        .capabilities(McpSchema.ServerCapabilities.builder().tools(true).build()).build();
    jetty = new Server();
    ServerConnector connector = new ServerConnector(jetty);
    connector.setHost("127.0.0.1");
    connector.setPort(0);
    jetty.addConnector(connector);
    ServletContextHandler context = new ServletContextHandler();
    context.addServlet(new ServletHolder(transport), "/mcp");
    Filter recorder = (request, response, chain) -> {
      HttpServletRequest http = (HttpServletRequest) request;
      Map<String, String> headers = new HashMap<>();
      Collections.list(http.getHeaderNames()).forEach(h -> headers.put(h.toLowerCase(), http.getHeader(h)));
      headers.put(":method", http.getMethod());
      requests.add(headers);
      chain.doFilter(request, response);
    };
    context.addFilter(new FilterHolder(recorder), "/*", EnumSet.of(DispatcherType.REQUEST));
    jetty.setHandler(context);
    try {
      jetty.start();
    } catch (Exception e) {
      throw new IllegalStateException("cannot start the fake MCP server", e);
    }
  }

  /**
   * A server with tools echo (its text back), fail (isError), boom (a JSON-RPC error), hang (answers
   * once released) and write_file.
   */
  public static FakeMcpServer start() {
    FakeMcpServer server = new FakeMcpServer();
    server.tool("echo", "Echoes its text", args -> text("echo: " + args.get("text")));
    server.tool("fail", "Always fails", args -> McpSchema.CallToolResult.builder().addTextContent("disk on fire")
        .isError(true).build());
    server.tool("boom", "Answers a JSON-RPC error", args -> {
      throw McpError.builder(-32602).message("no such file: " + args.get("text")).build();
    });
    server.tool("hang", "Answers once released", args -> {
      CountDownLatch gate = server.held.computeIfAbsent("hang", k -> new CountDownLatch(1));
      try {
        gate.await(60, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return text("released");
    });
    server.tool("write_file", "Writes a file", args -> McpSchema.CallToolResult.builder()
        .addTextContent("{\"written\":true}").structuredContent(Map.of("written", true)).build());
    return server;
  }

  /** Adds (or replaces) tool {@code name}: the answer to a call is {@code answer} of its arguments. */
  public void tool(String name, String description, Function<Map<String, Object>, McpSchema.CallToolResult> answer) {
    if (mcp.listTools().stream().anyMatch(t -> t.name().equals(name))) {
      mcp.removeTool(name);
    }
    McpSchema.Tool tool = McpSchema.Tool.builder().name(name).description(description)
        .inputSchema(json, ANY_OBJECT).build();
    mcp.addTool(McpServerFeatures.SyncToolSpecification.builder().tool(tool).callHandler((exchange, request) -> {
      Map<String, Object> args = request.arguments() == null ? Map.of() : request.arguments();
      calls.add(new ToolCall(request.name(), args));
      return answer.apply(args);
    }).build());
  }

  public void removeTool(String name) {
    mcp.removeTool(name);
  }

  public static McpSchema.CallToolResult text(String text) {
    return McpSchema.CallToolResult.builder().addTextContent(text).build();
  }

  /** Lets the calls of tool hang that wait (and those to come) answer. */
  public void release() {
    held.computeIfAbsent("hang", k -> new CountDownLatch(1)).countDown();
  }

  public String url() {
    return "http://127.0.0.1:" + ((ServerConnector) jetty.getConnectors()[0]).getLocalPort() + "/mcp";
  }

  public List<ToolCall> calls() {
    synchronized (calls) {
      return List.copyOf(calls);
    }
  }

  /** The headers of every request (names in lower case; ":method" the method), in order. */
  public List<Map<String, String>> requests() {
    synchronized (requests) {
      return List.copyOf(requests);
    }
  }

  @Override
  public void close() {
    release();
    try {
      mcp.close();
    } catch (RuntimeException e) {
      // closing
    }
    try {
      jetty.stop();
    } catch (Exception e) {
      // closing
    }
  }
}
