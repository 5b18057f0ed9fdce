import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { loadConfig } from '../../config.js'
import { generateKey } from '../../plugins/auth/keys.js'
import { build, captureLogs, newAccount } from '../support/app.js'

const metadataOf = async (app: Awaited<ReturnType<typeof build>>, headers: Record<string, string> = {}) =>
  app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server', headers })

t.test('the metadata names the endpoints under PUBLIC_URL; jwks_uri only with asymmetric keys', async (t) => {
  const app = await build(t, { PUBLIC_URL: 'https://api.example.com', CATALOG_WRITE_SCOPE: 'items:write' })
  const res = await metadataOf(app, { host: 'attacker.example' })
  t.equal(res.statusCode, 200)
  t.match(res.headers['cache-control'], /max-age=\d+/)
  t.same(res.json(), {
    issuer: 'https://api.example.com',
    token_endpoint: 'https://api.example.com/api/v1/auth/login',
    revocation_endpoint: 'https://api.example.com/api/v1/auth/revoke',
    grant_types_supported: ['password', 'refresh_token'],
    response_types_supported: [],
    token_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
    revocation_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
    scopes_supported: ['me', 'items:write']
  }, 'the Host header does not move the issuer')
  t.equal((await app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).statusCode, 404, 'no key set: an HS256 key is secret')
})

t.test('without PUBLIC_URL the request\'s host is the origin', async (t) => {
  const key = generateKey('EdDSA')
  const app = await build(t, { JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: JSON.stringify(key) })
  const body = (await metadataOf(app, { host: 'localhost:8000' })).json()
  t.equal(body.issuer, 'http://localhost:8000')
  t.equal(body.jwks_uri, 'http://localhost:8000/.well-known/jwks.json')
  t.equal(body.token_endpoint, 'http://localhost:8000/api/v1/auth/login')
})

t.test('a forged Host cannot reach a shared cache: without PUBLIC_URL the metadata is never stored', async (t) => {
  const app = await build(t, { TRUST_PROXY: true })
  const forged: Array<Record<string, string>> = [{ host: 'evil.example' }, { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' }]
  for (const headers of forged) {
    const res = await metadataOf(app, headers)
    t.equal(res.statusCode, 200)
    t.match(res.json().token_endpoint, /^https?:\/\/evil\.example\//, 'the origin is the request\'s own, for the requester alone')
    t.equal(res.headers['cache-control'], 'no-store', `${JSON.stringify(headers)}: no cache may keep it for another client`)
  }
})

t.test('with PUBLIC_URL the metadata ignores Host and the forwarded headers, and may be cached by anyone', async (t) => {
  const app = await build(t, { PUBLIC_URL: 'https://api.example.com', TRUST_PROXY: true })
  const res = await metadataOf(app, { host: 'evil.example', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'http' })
  t.equal(res.json().issuer, 'https://api.example.com')
  t.equal(res.json().token_endpoint, 'https://api.example.com/api/v1/auth/login')
  t.equal(res.headers['cache-control'], 'public, max-age=3600')
})

t.test('TRUST_PROXY without PUBLIC_URL warns at boot; either alone, or both, does not', async (t) => {
  const warnings = async (settings: Parameters<typeof build>[1]) => {
    const { lines, logger } = captureLogs()
    await (await build(t, settings, { logger })).ready()
    return lines.filter((line) => line.level === 40 && /PUBLIC_URL/.test(String(line.msg))).map((line) => String(line.msg))
  }
  const [warning, ...rest] = await warnings({ TRUST_PROXY: ['10.0.0.0/8'] })
  t.match(warning, /TRUST_PROXY is set without PUBLIC_URL/)
  t.same(rest, [], 'one line')
  t.same(await warnings({ TRUST_PROXY: 1 }), [warning], 'a hop count trusts X-Forwarded-Host too')
  t.same(await warnings({ TRUST_PROXY: true, PUBLIC_URL: 'https://api.example.com' }), [])
  t.same(await warnings({}), [], 'without TRUST_PROXY')
  t.same(await warnings({ TRUST_PROXY: 0 }), [], 'no hop trusted')
})

t.test('the document lists the well-known routes', async (t) => {
  const app = await build(t, { JWT_ALGORITHM: 'ES256', JWT_PRIVATE_KEY: JSON.stringify(generateKey('ES256')) })
  const paths = (await app.inject({ method: 'GET', url: '/docs/json' })).json().paths
  t.ok(paths['/.well-known/oauth-authorization-server'])
  t.ok(paths['/.well-known/jwks.json'])
  t.ok(paths['/api/v1/auth/revoke'])
})

t.test('JWT_PRIVATE_KEY_FILE is read at startup; a missing file or both variables stop it', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'plinth-keys-'))
  const key = generateKey('EdDSA')
  const file = join(dir, 'key.json')
  await writeFile(file, JSON.stringify(key))
  const app = await build(t, loadConfig({ JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY_FILE: file }))
  const { session } = await newAccount(app)
  t.equal(JSON.parse(Buffer.from(session.access_token.split('.')[0]!, 'base64url').toString()).kid, key.kid)
  await t.rejects(build(t, loadConfig({ JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY_FILE: join(dir, 'absent.json') })),
    { code: 'PLINTH_INVALID_CONFIG', message: `JWT_PRIVATE_KEY_FILE ${join(dir, 'absent.json')}: no such file` })
  t.throws(() => loadConfig({ JWT_PRIVATE_KEY: JSON.stringify(key), JWT_PRIVATE_KEY_FILE: file }),
    { message: 'JWT_PRIVATE_KEY and JWT_PRIVATE_KEY_FILE are both set; keep one' })
  t.throws(() => loadConfig({ JWT_ALGORITHM: 'RS256' }), { message: /JWT_ALGORITHM: must be one of HS256, EdDSA, ES256/ })
  t.throws(() => loadConfig({ PUBLIC_URL: 'https://api.example.com/' }), { message: /PUBLIC_URL: must be the origin/ })
})
