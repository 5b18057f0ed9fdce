import { createHmac, createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto'
import { createSigner } from 'fast-jwt'
import t from 'tap'
import { generateKey, loadSigningKeys, thumbprint } from '../../plugins/auth/keys.js'
import { build, claimsOf, newAccount } from '../support/app.js'

const ed = generateKey('EdDSA')
const es = generateKey('ES256')
const headerOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString())
const me = (app: Awaited<ReturnType<typeof build>>, token: string) =>
  app.inject({ method: 'GET', url: '/api/v1/users/me', headers: { authorization: `Bearer ${token}` } })
const publicJwk = ({ d: _, ...rest }: Record<string, unknown>) => rest

for (const [algorithm, key] of [['EdDSA', ed], ['ES256', es]] as const) {
  t.test(`${algorithm}: tokens name their key, verify, and the public key is published`, async (t) => {
    const app = await build(t, { JWT_ALGORITHM: algorithm, JWT_PRIVATE_KEY: JSON.stringify(key) })
    const { session } = await newAccount(app)
    t.same(headerOf(session.access_token), { alg: algorithm, typ: 'JWT', kid: key.kid })
    t.equal((await me(app, session.access_token)).statusCode, 200)
    const jwks = await app.inject({ method: 'GET', url: '/.well-known/jwks.json' })
    t.equal(jwks.statusCode, 200)
    t.match(jwks.headers['cache-control'], /max-age=\d+/)
    const [published] = jwks.json().keys
    t.same(published, { ...publicJwk(key), use: 'sig' }, 'the public half only, with kid, alg and use')
    t.notOk('d' in published)
  })
}

t.test('a PEM key gets its RFC 7638 thumbprint as kid', async (t) => {
  const { privateKey } = generateKeyPairSync('ed25519')
  const pem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
  const keys = loadSigningKeys({ algorithm: 'EdDSA', secret: 'unused', privateKey: pem })
  t.equal(keys.kid, thumbprint(createPublicKey(privateKey).export({ format: 'jwk' })))
  // RFC 8037 appendix A.3: the thumbprint of its Ed25519 example key.
  t.equal(thumbprint({ crv: 'Ed25519', kty: 'OKP', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo' }), 'kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k')
})

t.test('rotation: a previous key still verifies and is still published; an unknown kid is 401', async (t) => {
  const old = await build(t, { JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: JSON.stringify(ed), SECRET_KEY: undefined })
  const { email, session } = await newAccount(old)
  const next = generateKey('EdDSA')
  const rotated = await build(t, {
    JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: JSON.stringify(next), JWT_PREVIOUS_KEYS: JSON.stringify({ keys: [publicJwk(ed)] })
  }, { database: old.plinthDb })
  t.equal((await me(rotated, session.access_token)).statusCode, 200, 'a token of the previous key')
  t.same((await rotated.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json().keys.map((k: { kid: string }) => k.kid), [next.kid, ed.kid])
  t.ok(email)

  const stranger = generateKey('EdDSA')
  const unknown = await build(t, { JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: JSON.stringify(stranger) }, { database: old.plinthDb })
  const res = await me(unknown, session.access_token)
  t.equal(res.statusCode, 401)
  t.match(res.headers['www-authenticate'], /error="invalid_token"/)
  t.match(res.json().detail, /signed with a key this server does not know/)
})

t.test('another algorithm is 401: an HS256 token made with the public key as its secret, alg none, ES256 for EdDSA', async (t) => {
  const app = await build(t, { JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: JSON.stringify(ed) })
  const { user, session } = await newAccount(app)
  const claims = { ...claimsOf(session.access_token) }
  const pem = createPublicKey({ key: ed as never, format: 'jwk' }).export({ format: 'pem', type: 'spki' }).toString()
  // Made by hand: libraries refuse to sign HMAC with a public key, as an attacker would not.
  const hs256 = (secret: string) => {
    const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url')
    const unsigned = `${part({ alg: 'HS256', typ: 'JWT', kid: ed.kid })}.${part(claims)}`
    return `${unsigned}.${createHmac('sha256', secret).update(unsigned).digest('base64url')}`
  }
  const forged = [
    hs256(pem),
    hs256(JSON.stringify(publicJwk(ed))),
    hs256(String(ed.x)),
    createSigner({ algorithm: 'none', kid: ed.kid } as never)(claims),
    createSigner({ key: createPrivateKey({ key: es as never, format: 'jwk' }).export({ format: 'pem', type: 'pkcs8' }).toString(), algorithm: 'ES256', kid: ed.kid })(claims)
  ]
  for (const token of forged) {
    const res = await me(app, token)
    t.equal(res.statusCode, 401, headerOf(token).alg)
    t.match(res.json().detail, /not signed with EdDSA/)
  }
  t.equal(String(user.id), claims.sub)
})

t.test('iss and aud are signed, and required on every verify', async (t) => {
  const settings = { JWT_ALGORITHM: 'EdDSA' as const, JWT_PRIVATE_KEY: JSON.stringify(ed), JWT_ISSUER: 'https://auth.example.com', JWT_AUDIENCE: 'plinth-api' }
  const app = await build(t, settings)
  const { session } = await newAccount(app)
  t.match(claimsOf(session.access_token), { iss: 'https://auth.example.com', aud: 'plinth-api' })
  t.equal((await me(app, session.access_token)).statusCode, 200)
  for (const [what, other] of [
    ['another issuer', { JWT_ISSUER: 'https://evil.example.com' }],
    ['another audience', { JWT_AUDIENCE: 'other-api' }]
  ] as const) {
    const strict = await build(t, { ...settings, ...other }, { database: app.plinthDb })
    const res = await me(strict, session.access_token)
    t.equal(res.statusCode, 401, what)
    t.match(res.json().detail, /another issuer or audience/, what)
  }
  const bare = await build(t, { JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: JSON.stringify(ed) }, { database: app.plinthDb })
  const unclaimed = (await newAccount(bare)).session.access_token
  t.equal((await me(app, unclaimed)).statusCode, 401, 'a token without iss and aud, where they are required')
})

t.test('a missing, malformed or unfit key fails the boot', async (t) => {
  const { privateKey: rsa } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ JWT_ALGORITHM: 'EdDSA' }, /EdDSA needs a privateKey \(JWT_PRIVATE_KEY or JWT_PRIVATE_KEY_FILE\)/],
    [{ JWT_ALGORITHM: 'ES256', JWT_PRIVATE_KEY: JSON.stringify(ed) }, /privateKey is not an EC key on P-256, which ES256 signs with/],
    [{ JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: rsa.export({ format: 'pem', type: 'pkcs8' }).toString() }, /privateKey is not an Ed25519 key/],
    [{ JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: 'not a key' }, /privateKey is not a PEM or JWK key/],
    [{ JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: JSON.stringify(publicJwk(ed)) }, /privateKey is not a PEM or JWK key/],
    [{ JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: JSON.stringify(ed), JWT_PREVIOUS_KEYS: '{"keys": 1}' }, /previousKeys must be a JWK Set/],
    [{ JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: JSON.stringify(ed), JWT_PREVIOUS_KEYS: 'not json' }, /previousKeys must be a JWK Set/],
    [{ JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: JSON.stringify(ed), JWT_PREVIOUS_KEYS: JSON.stringify([publicJwk(es)]) }, /previousKeys\[0\] is not an Ed25519 key/],
    [{ JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: JSON.stringify(ed), JWT_PREVIOUS_KEYS: JSON.stringify([publicJwk(ed)]) }, /previousKeys\[0\] has kid .*, which another key has/],
    [{ JWT_PRIVATE_KEY: JSON.stringify(ed) }, /privateKey and previousKeys are for EdDSA and ES256; HS256 signs with the secret/]
  ]
  for (const [settings, message] of cases) {
    await t.rejects(build(t, settings as never), { code: 'AUTH_INVALID_OPTIONS', message }, JSON.stringify(settings).slice(0, 60))
  }
})
