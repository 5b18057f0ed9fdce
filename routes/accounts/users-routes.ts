import { Type } from '@sinclair/typebox'
import type { NewUserRow } from '../../db/users.js'
import { scopeText } from '../../db/users.js'
import { hashPassword, verifyPassword } from '../../plugins/auth/passwords.js'
import type { TypeBoxInstance } from '../../plugins/validation.js'
import { ref } from '../../schemas/common.js'
import { problemResponses, type ProblemExample } from '../../schemas/error.js'
import { page, pageQuery } from '../../schemas/page.js'
import {
  MeUpdateSchema, ScopesSchema, UserAdminUpdateSchema, UserIdParams, UserPageSchema, UserSchema
} from '../../schemas/user.js'
import { toPublic, type AccountsContext } from './context.js'
import { EmailTaken, UserNotFound, WrongCurrentPassword } from './errors.js'

const missing: ProblemExample = [404, 'ACCOUNT_USER_NOT_FOUND', 'user 7 not found']

const tags = ['users']
const security = [{ OAuth2PasswordBearer: [] }]

/** The current user's profile, and the superuser's administration of every account. */
export function usersRoutes (app: TypeBoxInstance, ctx: AccountsContext) {
  const { users, sessions } = ctx

  /** Applies a change; a new password or a deactivation ends every session of that user. */
  async function change (id: number, values: Partial<NewUserRow> & { password?: string }) {
    const { password, ...rest } = values
    const updated = await users.update(id, password ? { ...rest, hashed_password: await hashPassword(password) } : rest)
    if (updated === 'email_taken') throw new EmailTaken(String(values.email).toLowerCase())
    if (!updated) throw new UserNotFound(id)
    if (password || values.is_active === false) await sessions.revokeAll(id)
    return toPublic(updated)
  }

  app.get('/users/me', {
    onRequest: app.authenticate,
    schema: {
      operationId: 'getMe',
      summary: 'The current user',
      tags,
      security,
      response: { 200: ref(UserSchema), ...problemResponses(401, 403) }
    }
  }, async function getMe (request) {
    return toPublic(request.account)
  })

  app.patch('/users/me', {
    onRequest: app.authenticate,
    schema: {
      operationId: 'updateMe',
      summary: 'Change the current user\'s email or password (a new password needs current_password)',
      tags,
      security,
      body: MeUpdateSchema(ctx.passwordMinLength),
      response: { 200: ref(UserSchema), ...problemResponses(401, 403, 409, 422) }
    }
  }, async function updateMe (request) {
    const { email, password, current_password: current } = request.body
    if (password !== undefined && !await verifyPassword(request.account.hashed_password, current ?? '')) {
      throw new WrongCurrentPassword()
    }
    return change(request.account.id, { email, password })
  })

  app.get('/users/me/scopes', {
    onRequest: app.requireScopes('me'),
    schema: {
      operationId: 'getMyScopes',
      summary: 'The current user\'s scopes (needs scope "me")',
      tags,
      security: [{ OAuth2PasswordBearer: ['me'] }],
      response: { 200: ref(ScopesSchema), ...problemResponses(401, 403) }
    }
  }, async function getMyScopes (request) {
    return { scopes: toPublic(request.account).scopes }
  })

  app.get('/users', {
    onRequest: app.requireSuperuser,
    schema: {
      operationId: 'listUsers',
      summary: 'Every account, a page at a time (superuser)',
      tags,
      security,
      querystring: Type.Object(pageQuery(ctx), { additionalProperties: false }),
      response: { 200: ref(UserPageSchema), ...problemResponses(401, 403, 422) }
    }
  }, async function listUsers (request) {
    const offset = request.query.offset
    const limit = Math.min(request.query.limit, ctx.maxLimit)
    const [rows, total] = await Promise.all([users.list({ offset, limit }), users.count()])
    return page(rows.map(toPublic), total, { offset, limit })
  })

  app.get('/users/:user_id', {
    onRequest: app.requireSuperuser,
    schema: {
      operationId: 'getUser',
      summary: 'One account (superuser)',
      tags,
      security,
      params: UserIdParams,
      response: { 200: ref(UserSchema), ...problemResponses(401, 403, missing, 422) }
    }
  }, async function getUser (request) {
    const user = await users.get(request.params.user_id)
    if (!user) throw new UserNotFound(request.params.user_id)
    return toPublic(user)
  })

  app.patch('/users/:user_id', {
    onRequest: app.requireSuperuser,
    schema: {
      operationId: 'updateUser',
      summary: 'Change an account, its flags and scopes included (superuser)',
      tags,
      security,
      params: UserIdParams,
      body: UserAdminUpdateSchema(ctx.passwordMinLength),
      response: { 200: ref(UserSchema), ...problemResponses(401, 403, missing, 409, 422) }
    }
  }, async function updateUser (request) {
    const { scopes, ...rest } = request.body
    return change(request.params.user_id, { ...rest, scopes: scopes && scopeText(scopes) })
  })

  app.delete('/users/:user_id', {
    onRequest: app.requireSuperuser,
    schema: {
      operationId: 'deleteUser',
      summary: 'Delete an account and its sessions (superuser)',
      tags,
      security,
      params: UserIdParams,
      response: { 204: Type.Null({ description: 'Deleted' }), ...problemResponses(401, 403, missing, 422) }
    }
  }, async function deleteUser (request, reply) {
    if (!await users.delete(request.params.user_id)) throw new UserNotFound(request.params.user_id)
    return reply.code(204).send(null)
  })
}
