import type { AddressInfo } from 'node:net'
import { createRemoteJWKSet, jwtVerify } from 'jose'
import * as oauth from 'oauth4webapi'
import t from 'tap'
import type { App } from '../../../../app.js'
import type { Config } from '../../../../config.js'
import { generateKey } from '../../../../plugins/auth/keys.js'
import { PASSWORD, build, register } from '../../../support/app.js'

// Stock clients, unmodified, against a listening server: oauth4webapi for the grants, jose for the keys.
const ISSUER = 'https://auth.plinth.test'
const AUDIENCE = 'plinth-api'
const first = generateKey('EdDSA')
const settings: Partial<Config> = {
  JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: JSON.stringify(first), JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE, LOGIN_MAX_FAILURES: 0
}
const insecure = { [oauth.allowInsecureRequests]: true }

async function listening (app: App) {
  await app.listen({ host: '127.0.0.1', port: 0 })
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
}

async function discover (base: string) {
  const issuer = new URL(base)
  return oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }))
}

const app = await build(t, settings)
const base = await listening(app)
await register(app, 'interop@example.com')
const as = await discover(base)
const client: oauth.Client = { client_id: 'interop-test' }
const none = oauth.None()

const passwordGrant = async (password = PASSWORD, clientAuth = none) => oauth.processGenericTokenEndpointResponse(as, client,
  await oauth.genericTokenEndpointRequest(as, client, clientAuth, 'password', new URLSearchParams({ username: 'interop@example.com', password, scope: 'me' }), insecure))
const refreshGrant = async (token: string) =>
  oauth.processRefreshTokenResponse(as, client, await oauth.refreshTokenGrantRequest(as, client, none, token, insecure))

t.test('discovery: the metadata names the token, revocation and key endpoints', async (t) => {
  t.equal(as.issuer, base)
  t.equal(as.token_endpoint, `${base}/api/v1/auth/login`)
  t.equal(as.revocation_endpoint, `${base}/api/v1/auth/revoke`)
  t.equal(as.jwks_uri, `${base}/.well-known/jwks.json`)
  t.same(as.grant_types_supported, ['password', 'refresh_token'])
})

t.test('the password grant, then the refresh grant at the token URL; a spent refresh token reads as invalid_grant', async (t) => {
  const tokens = await passwordGrant()
  t.equal(tokens.token_type, 'bearer')
  t.equal(tokens.scope, 'me')
  t.type(tokens.refresh_token, 'string')
  const refreshed = await refreshGrant(tokens.refresh_token!)
  t.not(refreshed.refresh_token, tokens.refresh_token)
  const me = await fetch(`${base}/api/v1/users/me`, { headers: { authorization: `Bearer ${refreshed.access_token}` } })
  t.equal(me.status, 200)
  await t.rejects(refreshGrant(tokens.refresh_token!), { name: 'ResponseBodyError', error: 'invalid_grant', error_description: /already used/ })
  await t.rejects(passwordGrant('wrong password'), { name: 'ResponseBodyError', error: 'invalid_grant', error_description: 'Incorrect email or password' })
  t.equal((await passwordGrant(PASSWORD, oauth.ClientSecretBasic('any secret'))).token_type, 'bearer', 'HTTP Basic client authentication')
})

t.test('revocation: a revoked refresh token no longer refreshes', async (t) => {
  const tokens = await passwordGrant()
  await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, none, tokens.refresh_token!, insecure))
  await t.rejects(refreshGrant(tokens.refresh_token!), { name: 'ResponseBodyError', error: 'invalid_grant' })
  await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, none, 'not a token', insecure))
  t.pass('an unknown token is revoked without error')
})

t.test('jose verifies access tokens with the published keys, with issuer and audience, before and after a rotation', async (t) => {
  const before = (await passwordGrant()).access_token
  const keys = createRemoteJWKSet(new URL(as.jwks_uri!))
  const { payload, protectedHeader } = await jwtVerify(before, keys, { issuer: ISSUER, audience: AUDIENCE, algorithms: ['EdDSA'] })
  t.equal(protectedHeader.kid, first.kid)
  t.equal(payload.type, 'access')
  await t.rejects(jwtVerify(before, keys, { issuer: ISSUER, audience: 'another-api' }), { code: 'ERR_JWT_CLAIM_VALIDATION_FAILED' })

  // The next key signs, the first is still published and accepted: what a deployment does while old tokens live.
  const next = generateKey('EdDSA')
  const { d: _, ...firstPublic } = first
  const rotated = await build(t, { ...settings, JWT_PRIVATE_KEY: JSON.stringify(next), JWT_PREVIOUS_KEYS: JSON.stringify({ keys: [firstPublic] }) },
    { database: app.plinthDb })
  const rotatedBase = await listening(rotated)
  const rotatedAs = await discover(rotatedBase)
  const after = oauth.processGenericTokenEndpointResponse(rotatedAs, client, await oauth.genericTokenEndpointRequest(rotatedAs, client, none, 'password',
    new URLSearchParams({ username: 'interop@example.com', password: PASSWORD }), insecure))
  const afterToken = (await after).access_token
  const rotatedKeys = createRemoteJWKSet(new URL(rotatedAs.jwks_uri!))
  t.equal((await jwtVerify(afterToken, rotatedKeys, { issuer: ISSUER, audience: AUDIENCE })).protectedHeader.kid, next.kid)
  t.equal((await jwtVerify(before, rotatedKeys, { issuer: ISSUER, audience: AUDIENCE })).protectedHeader.kid, first.kid, 'the previous key still verifies')
  const me = await fetch(`${rotatedBase}/api/v1/users/me`, { headers: { authorization: `Bearer ${before}` } })
  t.equal(me.status, 200, 'and the server still accepts its tokens')
  await t.rejects(jwtVerify(afterToken, createRemoteJWKSet(new URL(as.jwks_uri!)), { issuer: ISSUER }), { code: 'ERR_JWKS_NO_MATCHING_KEY' },
    'the old key set does not know the new key')
})
