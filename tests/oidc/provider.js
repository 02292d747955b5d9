// A real OpenID provider for the portal's single sign-on tests: the OpenID-certified `oidc-provider` package, started
// and stopped by tests/helpers/oidcprovider.py. Not part of the portal.
//
//   node provider.js STATE.json PORT
//
// STATE.json (written by the helper, read again whenever it changes):
//   {"clients": [{"client_id", "client_secret", "redirect_uris", "post_logout_redirect_uris"}],  (read at start)
//    "users": {"ada": {"groups": ["gpu-admins"], "email": "...", "name": "..."}},
//    "clock_offset": 0,   seconds added to the token endpoint's clock (-900: its ID tokens are expired when they arrive)
//    "tamper": false}     true: the token endpoint's ID token gets a claim its signature does not cover
//
// The login page is the package's development one: any user of "users" logs in with any password; consent is
// given at once (the portal is a first-party client).
import fs from 'node:fs';

import Provider from 'oidc-provider';

const [statePath, port] = process.argv.slice(2);
let state = {};
let stateTime = 0;

function readState() {
  const { mtimeMs } = fs.statSync(statePath);
  if (mtimeMs !== stateTime) {
    state = JSON.parse(fs.readFileSync(statePath, 'utf8'));
    stateTime = mtimeMs;
  }
  return state;
}
readState();

const realNow = Date.now;
let tokenEndpoint = false; // the clock is off at the token endpoint only (the login's cookies stay valid)
Date.now = () => realNow() + (tokenEndpoint ? (state.clock_offset || 0) * 1000 : 0);

const page = (title, body) => `<!DOCTYPE html><html><head><meta charset="utf-8"><title>${title}</title></head>
<body><h1>${title}</h1>${body}</body></html>`;

const provider = new Provider(`http://127.0.0.1:${port}`, {
  clients: state.clients.map((client) => ({ grant_types: ['authorization_code'], response_types: ['code'], ...client })),
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'preferred_username'],
            groups: ['groups'] },
  scopes: ['openid', 'email', 'profile', 'groups'],
  pkce: { required: () => true },
  ttl: { IdToken: 60, AccessToken: 600, Session: 3600, Grant: 3600, Interaction: 600 },
  cookies: { keys: ['cluster-portal-test-provider'] },
  features: {
    devInteractions: { enabled: true },
    rpInitiatedLogout: {
      enabled: true,
      logoutSource: async (ctx, form) => {
        ctx.body = page('Sign out of the test provider?', `${form}
<button autofocus type="submit" form="op.logoutForm" value="yes" name="logout">Yes, sign me out</button>
<button type="submit" form="op.logoutForm">No, stay signed in</button>`);
      },
      postLogoutSuccessSource: async (ctx) => { ctx.body = page('Signed out', '<p>You are signed out.</p>'); },
    },
  },
  async findAccount(ctx, sub) {
    const user = readState().users[sub];
    if (!user) return undefined;
    return {
      accountId: sub,
      async claims() {
        const found = readState().users[sub] || {};
        return { sub, preferred_username: sub, name: found.name || sub, email: found.email || `${sub}@lab.example`,
                 email_verified: true, groups: found.groups || [] };
      },
    };
  },
  async loadExistingGrant(ctx) {
    const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) return ctx.oidc.provider.Grant.find(grantId);
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId,
                                               accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope('openid email profile groups');
    await grant.save();
    return grant;
  },
  async renderError(ctx, out) {
    ctx.type = 'html';
    ctx.body = page('Error', `<pre>${JSON.stringify(out).replace(/</g, '&lt;')}</pre>`);
  },
});

provider.use(async (ctx, next) => {
  readState();
  tokenEndpoint = ctx.path === '/token';
  try {
    await next();
  } finally {
    tokenEndpoint = false;
  }
  if (ctx.path === '/token' && state.tamper && ctx.body && ctx.body.id_token) {
    const [header, payload, signature] = ctx.body.id_token.split('.');
    const claims = JSON.parse(Buffer.from(payload, 'base64url'));
    claims.groups = ['gpu-admins'];
    ctx.body = { ...ctx.body,
                 id_token: [header, Buffer.from(JSON.stringify(claims)).toString('base64url'), signature].join('.') };
  }
});

provider.listen(Number(port), '127.0.0.1', () => console.log(`listening on ${port}`));
