// A real OpenID Connect provider for askgate's sign-in test (tests/e2e/oidc.rs):
// oidc-provider (a certified implementation) on 127.0.0.1, port 0.
//
// It listens first and prints `port <N>` so that askgate can be configured
// with its issuer; it then reads one line on stdin, askgate's redirect URI,
// registers the client with it, and prints `ready`. Until then requests wait.
//
// Accounts: any login is accepted by the development login form (any
// password); the account's `sub` is the login, its address
// `<login>@example.com`, verified except for the login `eve`.
// Consent is taken as given (a first-party client), so that a sign-in is
// the login form alone.

import http from 'node:http';
import readline from 'node:readline';

import Provider from 'oidc-provider';

const CLIENT_ID = process.env.OIDC_CLIENT_ID || 'askgate';
const CLIENT_SECRET = process.env.OIDC_CLIENT_SECRET || 'askgate-test-client-secret';

let handler = null;
const waiting = [];
const server = http.createServer((req, res) => {
  if (handler) handler(req, res);
  else waiting.push([req, res]);
});

server.listen(0, '127.0.0.1', async () => {
  const { port } = server.address();
  process.stdout.write(`port ${port}\n`);

  const lines = readline.createInterface({ input: process.stdin });
  const redirect = await new Promise((resolve) => lines.once('line', (line) => resolve(line.trim())));

  const provider = new Provider(`http://127.0.0.1:${port}`, {
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        redirect_uris: [redirect],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    async findAccount(ctx, id) {
      return {
        accountId: id,
        async claims() {
          return { sub: id, email: `${id}@example.com`, email_verified: id !== 'eve' };
        },
      };
    },
    claims: { openid: ['sub'], email: ['email', 'email_verified'] },
    // A first-party client: the grant is given without a consent screen.
    async loadExistingGrant(ctx) {
      const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
      if (grantId) return ctx.oidc.provider.Grant.find(grantId);
      const grant = new ctx.oidc.provider.Grant({
        clientId: ctx.oidc.client.clientId,
        accountId: ctx.oidc.session.accountId,
      });
      grant.addOIDCScope('openid email');
      await grant.save();
      return grant;
    },
    pkce: { required: () => true },
    cookies: { keys: ['askgate-oidc-test-cookie-key'] },
    features: { devInteractions: { enabled: true } },
  });
  // Development warnings go to stderr; the test reads stdout only.
  handler = provider.callback();
  for (const [req, res] of waiting.splice(0)) handler(req, res);
  process.stdout.write('ready\n');
  // The test closes stdin (or kills us) when it is done.
  lines.on('close', () => process.exit(0));
});
