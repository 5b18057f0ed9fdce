import type { LoginFailures } from '../../db/login-failures.js'
import type { RefreshTokens } from '../../db/refresh-tokens.js'
import { scopeList, type User, type Users } from '../../db/users.js'
import type { UserPublic } from '../../schemas/user.js'

/** What the accounts route modules share: repositories and resolved options. */
export interface AccountsContext {
  users: Users
  refreshTokens: RefreshTokens
  loginFailures: LoginFailures
  passwordMinLength: number
  loginMaxFailures: number
  defaultLimit: number
  maxLimit: number
}

/** The public shape of an account; the response schema drops anything else by construction. */
export const toPublic = (user: User): UserPublic => ({
  id: user.id,
  email: user.email,
  is_active: user.is_active,
  is_superuser: user.is_superuser,
  scopes: scopeList(user.scopes)
})
