// Runway API reference: Swagger UI over the server's own OpenAPI document. No request leaves this
// server: no validator badge, no remote references.
window.addEventListener("load", () => {
  window.ui = SwaggerUIBundle({
    url: "/v1/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
  });
});
