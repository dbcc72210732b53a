# Homebrew formula for arcane-mcp, in this repository's own tap:
#   brew tap arcane-mcp/arcane-mcp https://github.com/arcane-mcp/arcane-mcp
#   brew install arcane-mcp
# It installs the release archive of the platform (.github/workflows/release.yml builds them).
# The version and the checksums are written by scripts/brew-formula.py from the release's
# SHA256SUMS; tests/packaging.rs checks that the version is Cargo.toml's.
class ArcaneMcp < Formula
  desc "MCP server for Arcane (Docker management): the whole REST API as safe MCP tools"
  homepage "https://github.com/arcane-mcp/arcane-mcp"
  version "0.1.0"
  license "MIT"

  on_macos do
    on_arm do
      url "https://github.com/arcane-mcp/arcane-mcp/releases/download/v0.1.0/arcane-mcp-v0.1.0-aarch64-apple-darwin.tar.gz"
      sha256 "0000000000000000000000000000000000000000000000000000000000000000"
    end
    on_intel do
      url "https://github.com/arcane-mcp/arcane-mcp/releases/download/v0.1.0/arcane-mcp-v0.1.0-x86_64-apple-darwin.tar.gz"
      sha256 "0000000000000000000000000000000000000000000000000000000000000000"
    end
  end

  on_linux do
    on_arm do
      url "https://github.com/arcane-mcp/arcane-mcp/releases/download/v0.1.0/arcane-mcp-v0.1.0-aarch64-unknown-linux-musl.tar.gz"
      sha256 "0000000000000000000000000000000000000000000000000000000000000000"
    end
    on_intel do
      url "https://github.com/arcane-mcp/arcane-mcp/releases/download/v0.1.0/arcane-mcp-v0.1.0-x86_64-unknown-linux-musl.tar.gz"
      sha256 "0000000000000000000000000000000000000000000000000000000000000000"
    end
  end

  def install
    bin.install "arcane-mcp"
    # The binary's licence, and Arcane's BSD-3 notice for the OpenAPI document compiled in.
    prefix.install "LICENSE", "LICENSE-arcane"
  end

  test do
    assert_match version.to_s, shell_output("#{bin}/arcane-mcp --version")
    # One call against the built-in simulated Arcane: the catalog loads, the engine runs and
    # the result is rendered, with no network and no file.
    assert_match "web-1", shell_output("#{bin}/arcane-mcp demo call container.list")
    # An MCP client's first message over stdio gets the server's answer.
    init = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",' \
           '"capabilities":{},"clientInfo":{"name":"brew-test","version":"1"}}}'
    assert_match '"serverInfo"', pipe_output("#{bin}/arcane-mcp demo", "#{init}\n", 0)
  end
end
