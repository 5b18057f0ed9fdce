import { Type, type Static } from '@sinclair/typebox'
import { Id, SCOPE_PATTERN, Text, ref } from './common.js'
import { pageOf } from './page.js'

/** Scope names: no commas or spaces, since scopes are stored comma-separated and sent space-separated. */
export const ScopeName = () => Text({ pattern: SCOPE_PATTERN, examples: ['me'] })
export const Email = () => Text({ format: 'email', maxLength: 254, examples: ['ada@example.com'] })
export const Password = (minLength: number) => Text({ minLength, maxLength: 1024, examples: ['correct horse battery staple'] })

export const UserSchema = Type.Object({
  id: Id(),
  email: Type.String({ format: 'email' }),
  is_active: Type.Boolean(),
  is_superuser: Type.Boolean(),
  scopes: Type.Array(Type.String()),
  is_verified: Type.Boolean({ description: 'Whether the owner proved the email address is theirs, by a link mailed to it' })
}, { $id: 'User', title: 'User', description: 'An account as the API shows it: never its password hash' })

export type User = Static<typeof UserSchema>

export const ScopesSchema = Type.Object({
  scopes: Type.Array(Type.String(), { examples: [['me']] })
}, { $id: 'Scopes', title: 'Scopes' })

export const RegisterSchema = (passwordMinLength: number) => Type.Object({
  email: Email(),
  password: Password(passwordMinLength)
}, { additionalProperties: false })

/** A new password or email needs the current password, so a stolen access token cannot take the account. */
export const MeUpdateSchema = (passwordMinLength: number) => Type.Object({
  email: Type.Optional(Email()),
  password: Type.Optional(Password(passwordMinLength)),
  current_password: Type.Optional(Text({ maxLength: 1024, description: 'Needed with `email` or `password`' }))
}, { additionalProperties: false, dependentRequired: { email: ['current_password'], password: ['current_password'] } })

const adminFlags = {
  is_active: Type.Optional(Type.Boolean()),
  is_superuser: Type.Optional(Type.Boolean()),
  scopes: Type.Optional(Type.Array(ScopeName(), { maxItems: 32 })),
  is_verified: Type.Optional(Type.Boolean())
}

export const UserAdminUpdateSchema = (passwordMinLength: number) => Type.Object({
  email: Type.Optional(Email()),
  password: Type.Optional(Password(passwordMinLength)),
  ...adminFlags
}, { additionalProperties: false })

export const UserCreateSchema = (passwordMinLength: number) => Type.Object({
  email: Email(),
  password: Password(passwordMinLength),
  ...adminFlags
}, { additionalProperties: false })

/** Deleting one's own account takes the password, so a stolen access token cannot. */
export const MeDeleteSchema = Type.Object({
  current_password: Text({ maxLength: 1024 })
}, { additionalProperties: false })

export const UserIdParams = Type.Object({ user_id: Id() })

export const UserPageSchema = pageOf(ref(UserSchema), { $id: 'UserPage', description: 'A page of accounts, ordered by id' })
