// A real OpenID Provider (oidc-provider, certified) for tests/e2e_oauth.rs, on 127.0.0.1 at a free
// port. Its issuer is printed as one JSON line on stdout once it listens.
//
// Usage: node provider.mjs JWT_RESOURCE [OPAQUE_RESOURCE]
//   JWT_RESOURCE    the resource (RFC 8707) whose access tokens are JWTs (RFC 9068)
//   OPAQUE_RESOURCE a resource whose access tokens are opaque (for RFC 7662 introspection)
// Any other resource is granted as well, with JWTs, so a token minted for another service can
// be presented to the server under test.
//
// Clients (client_secret_basic): `ci` (client credentials), `ops-bot` (client credentials; its
// tokens carry `groups: [ops]`), `resource-server` (introspection only). Any other client
// registers itself (RFC 7591, open registration, as the MCP SDKs do) for the authorization-code
// flow; its sign-in is the provider's own development pages (devInteractions: a form whose
// login name becomes the token's `sub`, any password, then a consent form), which the tests
// post as a browser would. Such a client gets a refresh token whenever it may use the grant.
//
// Environment, for a provider shaped as Keycloak's or Authentik's are:
//   OIDC_ISSUER_PATH=/realms/arcane  the issuer has this path; the provider is mounted under it
//                                    (requests below it reach it with the path stripped, as a
//                                    proxy or an Express mount would pass them)
//   OIDC_DISCOVERY=rfc8414           the metadata is served where RFC 8414 §3.1 puts it for an
//                                    issuer with a path (`/.well-known/oauth-authorization-server
//                                    {path}`), and not at `{issuer}/.well-known/openid-configuration`
//
// Test hooks, beside the provider's own routes:
//   POST {issuer}/__test/sign   {"claims": {...}, "header": {...}, "key": "current" | "fresh"}
//                       → a JWS of the claims, signed with the provider's current key (or a key
//                       it never published); for tokens the provider would not mint (expired,
//                       another issuer).
//   POST {issuer}/__test/rotate → a new signing key: the provider restarts on the same port with it
//                       alone, so tokens of the old key are no longer valid.
import http from 'node:http';
import Provider from 'oidc-provider';
import * as jose from 'jose';

const [jwtResource, opaqueResource] = process.argv.slice(2);
if (!jwtResource) {
  console.error('usage: node provider.mjs JWT_RESOURCE [OPAQUE_RESOURCE]');
  process.exit(2);
}

let kidCounter = 0;
async function newKey() {
  const { privateKey } = await jose.generateKeyPair('RS256', { extractable: true });
  const jwk = await jose.exportJWK(privateKey);
  kidCounter += 1;
  return { ...jwk, kid: `key-${kidCounter}-${Date.now()}`, alg: 'RS256', use: 'sig' };
}

const scope = 'arcane:read arcane:write';

function configuration(jwk) {
  return {
    clients: [
      {
        client_id: 'ci',
        client_secret: 'ci-secret',
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        scope,
      },
      {
        client_id: 'ops-bot',
        client_secret: 'ops-secret',
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        scope,
      },
      {
        client_id: 'resource-server',
        client_secret: 'rs-secret',
        grant_types: [],
        redirect_uris: [],
        response_types: [],
      },
    ],
    jwks: { keys: [jwk] },
    scopes: ['openid', 'arcane:read', 'arcane:write'],
    features: {
      devInteractions: { enabled: true },
      registration: { enabled: true },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => jwtResource,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resource) => ({
          scope,
          audience: resource,
          accessTokenTTL: 300,
          accessTokenFormat: resource === opaqueResource ? 'opaque' : 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
    // The default issues one only for `offline_access`, which an MCP client has no reason to
    // ask of a resource server's scopes.
    issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
    extraTokenClaims: (ctx, token) =>
      token.clientId === 'ops-bot' ? { groups: ['ops'] } : undefined,
  };
}

let issuer;
let signing;
let current;

async function build() {
  const p = new Provider(issuer, configuration(signing));
  p.proxy = false;
  // No output but the issuer line: the provider's own warnings about development settings.
  p.on('server_error', (ctx, err) => console.error('oidc-provider:', err));
  current = p.callback();
}

async function readJson(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  return chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
}

const server = http.createServer(async (req, res) => {
  const mount = process.env.OIDC_ISSUER_PATH ?? '';
  try {
    if (req.method === 'POST' && req.url === `${mount}/__test/sign`) {
      const { claims, header = {}, key = 'current' } = await readJson(req);
      const jwk = key === 'fresh' ? await newKey() : signing;
      const privateKey = await jose.importJWK(jwk, 'RS256');
      const jws = await new jose.SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: jwk.kid, typ: 'at+jwt', ...header })
        .sign(privateKey);
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(jws);
      return;
    }
    if (req.method === 'POST' && req.url === `${mount}/__test/rotate`) {
      signing = await newKey();
      await build();
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(signing.kid);
      return;
    }
    const rfc8414 = process.env.OIDC_DISCOVERY === 'rfc8414';
    if (rfc8414 && req.url === `/.well-known/oauth-authorization-server${mount}`) {
      req.url = `${mount}/.well-known/openid-configuration`;
    } else if (rfc8414 && req.url.startsWith(`${mount}/.well-known/`)) {
      res.writeHead(404);
      res.end();
      return;
    }
    if (!req.url.startsWith(`${mount}/`) && req.url !== mount) {
      res.writeHead(404);
      res.end();
      return;
    }
    req.originalUrl = req.url;
    req.url = req.url.slice(mount.length) || '/';
    current(req, res);
  } catch (e) {
    res.writeHead(500);
    res.end(String(e));
  }
});

server.listen(0, '127.0.0.1', async () => {
  issuer = `http://127.0.0.1:${server.address().port}${process.env.OIDC_ISSUER_PATH ?? ''}`;
  signing = await newKey();
  await build();
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});
