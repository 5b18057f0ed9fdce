import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type JsonWebKey, type KeyObject } from 'node:crypto'
import { InvalidAuthOptions } from './errors.js'

/** The shortest HS256 secret taken: an HMAC key shorter than its hash's output is weaker than the hash, and a short one is guessed. */
export const MIN_SECRET_BYTES = 32

export const ALGORITHMS = ['HS256', 'EdDSA', 'ES256'] as const
export type Algorithm = typeof ALGORITHMS[number]

const CURVES: Record<Exclude<Algorithm, 'HS256'>, { type: string, curve?: string, describe: string }> = {
  EdDSA: { type: 'ed25519', describe: 'an Ed25519 key' },
  ES256: { type: 'ec', curve: 'prime256v1', describe: 'an EC key on P-256' }
}

export interface VerifyingKey {
  kid: string
  pem: string
  jwk: JsonWebKey & { kid: string, alg: Algorithm, use: 'sig' }
}

export interface SigningKeys {
  algorithm: Algorithm
  signing: string
  /** The signing key's id, in every token's header; none for HS256. */
  kid?: string
  verifying: Map<string, VerifyingKey>
}

/** RFC 7638: the SHA-256 of the key's required members, in order, as the key id when none is given. */
export function thumbprint (jwk: JsonWebKey): string {
  const members = jwk.kty === 'OKP' ? { crv: jwk.crv, kty: jwk.kty, x: jwk.x } : { crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y }
  return createHash('sha256').update(JSON.stringify(members)).digest('base64url')
}

/** A PEM or a JWK (JSON text or object); a private JWK read as its public half unless `wantPrivate`. */
function readKey (text: string | JsonWebKey, wantPrivate: boolean): { key: KeyObject, kid?: string } {
  const jwk = typeof text === 'object' ? text : text.trim().startsWith('{') ? JSON.parse(text) as JsonWebKey & { kid?: string } : undefined
  if (jwk) {
    const kid = typeof jwk.kid === 'string' ? jwk.kid : undefined
    const key = wantPrivate ? createPrivateKey({ key: jwk, format: 'jwk' }) : jwk.d ? createPublicKey(createPrivateKey({ key: jwk, format: 'jwk' })) : createPublicKey({ key: jwk, format: 'jwk' })
    return { key, kid }
  }
  return { key: wantPrivate ? createPrivateKey(text as string) : createPublicKey(text as string) }
}

function checkCurve (algorithm: Exclude<Algorithm, 'HS256'>, key: KeyObject, what: string) {
  const { type, curve, describe } = CURVES[algorithm]
  if (key.asymmetricKeyType !== type || (curve && key.asymmetricKeyDetails?.namedCurve !== curve)) {
    throw new InvalidAuthOptions(`${what} is not ${describe}, which ${algorithm} signs with`)
  }
}

function verifying (algorithm: Exclude<Algorithm, 'HS256'>, publicKey: KeyObject, kid: string | undefined): VerifyingKey {
  const jwk = publicKey.export({ format: 'jwk' })
  const id = kid ?? thumbprint(jwk)
  return { kid: id, pem: publicKey.export({ format: 'pem', type: 'spki' }).toString(), jwk: { ...jwk, kid: id, alg: algorithm, use: 'sig' } }
}

function jwkList (text: string): JsonWebKey[] {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw new InvalidAuthOptions('previousKeys must be a JWK Set ({"keys": [...]}) or a JSON array of JWKs')
  }
  const keys = Array.isArray(parsed) ? parsed : (parsed as { keys?: unknown })?.keys
  if (!Array.isArray(keys) || !keys.every((key) => typeof key === 'object' && key !== null)) {
    throw new InvalidAuthOptions('previousKeys must be a JWK Set ({"keys": [...]}) or a JSON array of JWKs')
  }
  return keys as JsonWebKey[]
}

function attempt<T> (what: string, read: () => T): T {
  try {
    return read()
  } catch (err) {
    if ((err as { code?: string }).code === 'AUTH_INVALID_OPTIONS') throw err
    throw new InvalidAuthOptions(`${what} is not a PEM or JWK key: ${(err as Error).message}`)
  }
}

export interface KeyOptions {
  algorithm: Algorithm
  secret: string
  privateKey?: string
  keyId?: string
  previousKeys?: string
}

/** The keys to sign and verify with; a missing or unfit key fails the boot rather than signing with the wrong one. */
export function loadSigningKeys ({ algorithm, secret, privateKey, keyId, previousKeys }: KeyOptions): SigningKeys {
  if (algorithm === 'HS256') {
    if (privateKey !== undefined || previousKeys !== undefined) {
      throw new InvalidAuthOptions('privateKey and previousKeys are for EdDSA and ES256; HS256 signs with the secret')
    }
    return { algorithm, signing: secret, verifying: new Map() }
  }
  if (privateKey === undefined) {
    throw new InvalidAuthOptions(`${algorithm} needs a privateKey (JWT_PRIVATE_KEY or JWT_PRIVATE_KEY_FILE); \`plinth keys generate\` makes one`)
  }
  const { key, kid } = attempt('privateKey', () => readKey(privateKey, true))
  checkCurve(algorithm, key, 'privateKey')
  const current = verifying(algorithm, createPublicKey(key), keyId ?? kid)
  const keys = new Map([[current.kid, current]])
  for (const [i, jwk] of (previousKeys === undefined ? [] : jwkList(previousKeys)).entries()) {
    const previous = attempt(`previousKeys[${i}]`, () => readKey(jwk, false))
    checkCurve(algorithm, previous.key, `previousKeys[${i}]`)
    const entry = verifying(algorithm, previous.key, previous.kid)
    if (keys.has(entry.kid)) throw new InvalidAuthOptions(`previousKeys[${i}] has kid ${entry.kid}, which another key has`)
    keys.set(entry.kid, entry)
  }
  return { algorithm, signing: key.export({ format: 'pem', type: 'pkcs8' }).toString(), kid: current.kid, verifying: keys }
}

export function generateKey (algorithm: Exclude<Algorithm, 'HS256'>): JsonWebKey & { kid: string, alg: Algorithm } {
  const { privateKey } = algorithm === 'EdDSA' ? generateKeyPairSync('ed25519') : generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const jwk = privateKey.export({ format: 'jwk' })
  return { ...jwk, kid: thumbprint(jwk), alg: algorithm }
}
