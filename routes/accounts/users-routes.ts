import type { NewUserRow } from '../../db/users.js'
import { scopeText } from '../../db/users.js'
import { hashPassword, verifyPassword } from '../../plugins/auth/passwords.js'
import type { App } from '../../plugins/validation.js'
import { page } from '../../schemas/page.js'
import { toPublic, type AccountsContext } from './context.js'
import { EmailTaken, UserNotFound, WrongCurrentPassword } from './errors.js'

/** The current user's profile, and the superuser's administration of every account. */
export function usersRoutes (app: App, ctx: AccountsContext) {
  const { users, sessions, schemas } = ctx

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
    schema: schemas.getMe
  }, async function getMe (request) {
    return toPublic(request.account)
  })

  app.patch('/users/me', {
    onRequest: app.authenticate,
    schema: schemas.updateMe
  }, async function updateMe (request) {
    const { email, password, current_password: current } = request.body
    if (password !== undefined && !await verifyPassword(request.account.hashed_password, current ?? '')) {
      throw new WrongCurrentPassword()
    }
    return change(request.account.id, { email, password })
  })

  app.get('/users/me/scopes', {
    onRequest: app.requireScopes('me'),
    schema: schemas.getMyScopes
  }, async function getMyScopes (request) {
    return { scopes: toPublic(request.account).scopes }
  })

  app.get('/users', {
    onRequest: app.requireSuperuser,
    schema: schemas.listUsers
  }, async function listUsers (request) {
    const offset = request.query.offset
    const limit = Math.min(request.query.limit, ctx.maxLimit)
    const [rows, total] = await Promise.all([users.list({ offset, limit }), users.count()])
    return page(rows.map(toPublic), total, { offset, limit })
  })

  app.get('/users/:user_id', {
    onRequest: app.requireSuperuser,
    schema: schemas.getUser
  }, async function getUser (request) {
    const user = await users.get(request.params.user_id)
    if (!user) throw new UserNotFound(request.params.user_id)
    return toPublic(user)
  })

  app.patch('/users/:user_id', {
    onRequest: app.requireSuperuser,
    schema: schemas.updateUser
  }, async function updateUser (request) {
    const { scopes, ...rest } = request.body
    return change(request.params.user_id, { ...rest, scopes: scopes && scopeText(scopes) })
  })

  app.delete('/users/:user_id', {
    onRequest: app.requireSuperuser,
    schema: schemas.deleteUser
  }, async function deleteUser (request, reply) {
    if (!await users.delete(request.params.user_id)) throw new UserNotFound(request.params.user_id)
    return reply.code(204).send(null)
  })
}
