# arcane-mcp container image: a static (musl) binary on an empty base, run as a non-root user.
# Build:  docker build -t arcane-mcp .
# Run:    docker run -i --rm -e ARCANE_URL -e ARCANE_API_KEY arcane-mcp   (MCP on stdio)
#   or:   docker run -d -p 8000:8000 -e ARCANE_URL -e ARCANE_MCP_AUTH_TOKEN arcane-mcp \
#           --transport http --listen 0.0.0.0:8000 --allowed-hosts localhost:8000
#         (Streamable HTTP at /mcp for a team; README, "Serving a team over HTTP")
# Only crates.io is needed at build time (Cargo.lock pins every crate; --locked enforces it).

FROM rust:1.95-alpine3.22 AS build
RUN apk add --no-cache musl-dev ca-certificates
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY crates ./crates
COPY benches ./benches
COPY catalog ./catalog
COPY overrides ./overrides
COPY schemas ./schemas
# The MCP Apps view, embedded in the binary (src/resources/app.rs).
COPY apps/dist ./apps/dist
# Arcane's 2.8.0 document, compiled into the binary as the demo's (crates/sim/build.rs).
COPY third_party ./third_party
# Alpine's Rust targets musl natively: the binary is statically linked.
RUN cargo build --release --locked --bin arcane-mcp \
    && mkdir -p /out/home/.cache \
    && cp target/release/arcane-mcp /out/arcane-mcp

FROM scratch
# TLS roots for Arcane's certificate; the spec cache lives under $HOME/.cache.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build --chown=65532:65532 /out/home /home/arcane
COPY --from=build /out/arcane-mcp /usr/local/bin/arcane-mcp
# The binary's licence, and Arcane's BSD-3 notice for the document compiled into it.
COPY LICENSE /usr/share/licenses/arcane-mcp/LICENSE
COPY third_party/arcane/LICENSE /usr/share/licenses/arcane-mcp/LICENSE-arcane
# The MCP registry's proof that this image belongs to the server server.json lists.
LABEL io.modelcontextprotocol.server.name="io.github.arcane-mcp/arcane-mcp" \
      org.opencontainers.image.title="arcane-mcp" \
      org.opencontainers.image.source="https://github.com/arcane-mcp/arcane-mcp" \
      org.opencontainers.image.licenses="MIT"
ENV HOME=/home/arcane \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
WORKDIR /home/arcane
USER 65532:65532
# Used only with --transport http (the listener of --listen).
EXPOSE 8000
ENTRYPOINT ["/usr/local/bin/arcane-mcp"]
