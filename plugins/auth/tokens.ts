import createError from '@fastify/error'
import { randomUUID } from 'node:crypto'
import type { JWT } from '@fastify/jwt'
import { PG_INT_MAX } from '../../schemas/common.js'

export type TokenType = 'access' | 'refresh'

/** The claims of every token this service signs. */
export interface TokenClaims {
  sub: string
  scopes: string[]
  type: TokenType
  jti: string
  iat: number
  exp: number
}

export interface TokenSubject {
  id: number
  scopes: string[]
}

export interface IssuedPair {
  access_token: string
  refresh_token: string
  token_type: 'bearer'
  expires_in: number
  /** What the server must remember about the refresh token. */
  refresh: { jti: string, expires_at: Date }
}

export const TokenError = createError('AUTH_TOKEN_INVALID', '%s')

const SUB = /^[1-9]\d{0,9}$/

/** The user id a token names, or a TokenError: `sub` must be a positive integer in decimal. */
export function subjectId (claims: TokenClaims): number {
  const id = typeof claims.sub === 'string' && SUB.test(claims.sub) ? Number(claims.sub) : NaN
  if (!(id <= PG_INT_MAX)) throw new TokenError('subject is not a user id')
  return id
}

export function createTokens (jwt: JWT, lifetimes: { accessSeconds: number, refreshSeconds: number }) {
  // `iat` and `exp` go in the payload: signing with an `expiresIn` option makes @fastify/jwt build
  // a new fast-jwt signer on every call.
  const sign = (subject: TokenSubject, type: TokenType, iat: number, exp: number, jti: string = randomUUID()) =>
    jwt.sign({ sub: String(subject.id), scopes: subject.scopes, type, jti, iat, exp })

  /** The id and expiry of a refresh token to issue, chosen before it is stored. */
  const nextRefresh = (): IssuedPair['refresh'] =>
    ({ jti: randomUUID(), expires_at: new Date((Math.floor(Date.now() / 1000) + lifetimes.refreshSeconds) * 1000) })

  return {
    nextRefresh,

    /** A new access token and a new refresh token (`refresh`, or a new one) for the subject's current scopes. */
    issuePair (subject: TokenSubject, refresh = nextRefresh()): IssuedPair {
      const now = Math.floor(Date.now() / 1000)
      return {
        access_token: sign(subject, 'access', now, now + lifetimes.accessSeconds),
        refresh_token: sign(subject, 'refresh', now, refresh.expires_at.getTime() / 1000, refresh.jti),
        token_type: 'bearer',
        expires_in: lifetimes.accessSeconds,
        refresh
      }
    },

    /** Signature (HS256 only), expiry, shape, and type: an access token is never a refresh token, nor the reverse. */
    verify (token: string, type: TokenType): TokenClaims {
      let claims: TokenClaims
      try {
        claims = jwt.verify<TokenClaims>(token)
      } catch (err) {
        const code = (err as { code?: string }).code
        throw new TokenError(code === 'FAST_JWT_EXPIRED' ? 'the token has expired' : 'the token is malformed or its signature is invalid')
      }
      if (claims.type !== type) throw new TokenError(`this is not ${type === 'access' ? 'an access' : 'a refresh'} token`)
      if (typeof claims.jti !== 'string' || typeof claims.exp !== 'number' || !Array.isArray(claims.scopes)) {
        throw new TokenError('the token lacks required claims')
      }
      subjectId(claims)
      return claims
    }
  }
}

export type Tokens = ReturnType<typeof createTokens>
