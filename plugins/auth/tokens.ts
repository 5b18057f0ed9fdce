import { randomUUID } from 'node:crypto'
import { createSigner, createVerifier } from 'fast-jwt'
import { systemClock, type Clock } from '../../db/clock.js'
import { PG_INT_MAX } from '../../schemas/common.js'
import { TokenError } from './errors.js'
import type { SigningKeys } from './keys.js'

export type TokenType = 'access' | 'refresh'

export interface TokenClaims {
  sub: string
  scopes: string[]
  /** On a refresh token: the scopes its login was narrowed to, which its successors keep. */
  grant?: string[]
  /** On an access token: its session, which the guard checks is live. */
  sid?: string
  type: TokenType
  jti: string
  iat: number
  exp: number
}

export interface TokenSubject {
  id: number
  scopes: string[]
  grant?: string[]
  sid?: string
}

export interface IssuedPair {
  access_token: string
  refresh_token: string
  token_type: 'bearer'
  expires_in: number
  /** The access token's scopes, space-separated (RFC 6749 section 5.1); absent when it has none. */
  scope?: string
  refresh: { jti: string, expires_at: Date }
}

const SUB = /^[1-9]\d{0,9}$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** The user id a token names, or a TokenError: `sub` must be a positive integer in decimal. */
export function subjectId (claims: TokenClaims): number {
  const id = typeof claims.sub === 'string' && SUB.test(claims.sub) ? Number(claims.sub) : NaN
  if (!(id <= PG_INT_MAX)) throw new TokenError('subject is not a user id')
  return id
}

export interface TokenSettings {
  accessSeconds: number
  refreshSeconds: number
  issuer?: string
  audience?: string
  clock?: Clock
}

/** Tokens each asymmetric verifier remembers as verified, each until it expires (or ten minutes). */
const VERIFIED_TOKENS = 1000

const VERIFY_ERRORS: Record<string, string> = {
  FAST_JWT_EXPIRED: 'the token has expired',
  FAST_JWT_INVALID_CLAIM_VALUE: 'the token is for another issuer or audience',
  FAST_JWT_MISSING_REQUIRED_CLAIM: 'the token is for another issuer or audience'
}

/** The token's header, read without trusting it: only to choose the key, whose verify then checks everything. */
function headerOf (token: string): { alg?: unknown, kid?: unknown } {
  try {
    const header = JSON.parse(Buffer.from(token.slice(0, token.indexOf('.')), 'base64url').toString()) as unknown
    return typeof header === 'object' && header !== null ? header : {}
  } catch {
    return {}
  }
}

/** The token's claims, read without trusting them: only once its signature has been verified. */
function payloadOf (token: string): { exp?: unknown } {
  try {
    const payload = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as unknown
    return typeof payload === 'object' && payload !== null ? payload : {}
  } catch {
    return {}
  }
}

const secondsOf = (clock: Clock) => Math.floor(clock().getTime() / 1000)

export function createTokens (keys: SigningKeys, { accessSeconds, refreshSeconds, issuer, audience, clock = systemClock }: TokenSettings) {
  const claimed = { ...(issuer ? { iss: issuer } : {}), ...(audience ? { aud: audience } : {}) }
  const signer = createSigner({ key: keys.signing, algorithm: keys.algorithm, ...(keys.kid ? { kid: keys.kid } : {}), ...claimed })
  // Pinning the algorithm refuses `alg: none` and any key-confusion trick; iss and aud, when set, must be there.
  // Expiry is checked on the clock below: fast-jwt's own check would read the system's.
  const checks = {
    algorithms: [keys.algorithm],
    ignoreExpiration: true,
    ...(issuer ? { allowedIss: issuer } : {}),
    ...(audience ? { allowedAud: audience } : {}),
    requiredClaims: Object.keys(claimed)
  }
  // An asymmetric verify costs far more than an HMAC and clients resend their tokens: those verifiers remember them.
  const verifiers = keys.algorithm === 'HS256'
    ? new Map([[undefined as string | undefined, createVerifier({ key: keys.signing, ...checks })]])
    : new Map([...keys.verifying.values()].map(({ kid, pem }) =>
      [kid as string | undefined, createVerifier({ key: pem, cache: VERIFIED_TOKENS, ...checks })]))

  const sign = (subject: TokenSubject, type: TokenType, iat: number, exp: number, jti: string = randomUUID()) =>
    signer({
      sub: String(subject.id),
      scopes: subject.scopes,
      type,
      jti,
      iat,
      exp,
      ...(type === 'refresh' && subject.grant ? { grant: subject.grant } : {}),
      ...(type === 'access' && subject.sid ? { sid: subject.sid } : {})
    })

  /** The verified claims, or a TokenError: another algorithm, an unknown key, a bad signature, expired, another issuer or audience. */
  function verified (token: string): TokenClaims {
    const { alg, kid } = headerOf(token)
    if (typeof alg !== 'string') throw new TokenError('the token is malformed or its signature is invalid')
    if (alg !== keys.algorithm) throw new TokenError(`the token is not signed with ${keys.algorithm}`)
    const verify = verifiers.get(keys.algorithm === 'HS256' ? undefined : kid as string)
    if (verify === undefined) throw new TokenError('the token is signed with a key this server does not know')
    let claims: TokenClaims
    try {
      claims = verify(token) as TokenClaims
    } catch (err) {
      const code = (err as { code?: string }).code ?? ''
      // As fast-jwt orders its checks, an expired token is told so before a wrong issuer or audience.
      if (code === 'FAST_JWT_INVALID_CLAIM_VALUE' && expired(payloadOf(token))) throw new TokenError(VERIFY_ERRORS.FAST_JWT_EXPIRED!)
      throw new TokenError(VERIFY_ERRORS[code] ?? 'the token is malformed or its signature is invalid')
    }
    if ('exp' in claims && typeof claims.exp !== 'number') throw new TokenError('the token is malformed or its signature is invalid')
    if (expired(claims)) throw new TokenError(VERIFY_ERRORS.FAST_JWT_EXPIRED!)
    return claims
  }

  /** Past its `exp` on the clock, as fast-jwt judges it: expired once the clock is beyond that second. */
  const expired = (claims: { exp?: unknown }) => typeof claims.exp === 'number' && clock().getTime() > claims.exp * 1000

  const nextRefresh = (): IssuedPair['refresh'] =>
    ({ jti: randomUUID(), expires_at: new Date((secondsOf(clock) + refreshSeconds) * 1000) })

  return {
    nextRefresh,

    /** The public keys as a JWK Set, for /.well-known/jwks.json; null with HS256, whose key is secret. */
    jwks: keys.algorithm === 'HS256' ? null : { keys: [...keys.verifying.values()].map((key) => key.jwk) },

    /** An access token alone, for a request that stands for a token it was once given (a change feed's ticket). */
    issueAccess (subject: TokenSubject): string {
      const now = secondsOf(clock)
      return sign(subject, 'access', now, now + accessSeconds)
    },

    issuePair (subject: TokenSubject, refresh = nextRefresh()): IssuedPair {
      const now = secondsOf(clock)
      return {
        access_token: sign(subject, 'access', now, now + accessSeconds),
        refresh_token: sign(subject, 'refresh', now, refresh.expires_at.getTime() / 1000, refresh.jti),
        token_type: 'bearer',
        expires_in: accessSeconds,
        ...(subject.scopes.length > 0 ? { scope: subject.scopes.join(' ') } : {}),
        refresh
      }
    },

    /** Algorithm, key, signature, expiry, issuer and audience, shape, and type: an access token is never a refresh token, nor the reverse. */
    verify (token: string, type: TokenType): TokenClaims {
      const claims = verified(token)
      if (claims.type !== type) throw new TokenError(`this is not ${type === 'access' ? 'an access' : 'a refresh'} token`)
      const strings = (value: unknown) => Array.isArray(value) && value.every((item) => typeof item === 'string')
      if (typeof claims.jti !== 'string' || typeof claims.exp !== 'number' || !strings(claims.scopes) ||
        (claims.grant !== undefined && !strings(claims.grant)) || (claims.sid !== undefined && !UUID.test(String(claims.sid)))) {
        throw new TokenError('the token lacks required claims')
      }
      subjectId(claims)
      return claims
    }
  }
}

export type Tokens = ReturnType<typeof createTokens>
