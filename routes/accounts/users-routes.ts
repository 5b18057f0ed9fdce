import type { FastifyRequest } from 'fastify'
import type { NewUserRow, UserRow } from '../../db/users.js'
import { scopeText } from '../../db/users.js'
import { hashPassword, verifyPassword } from '../../plugins/auth/passwords.js'
import type { App } from '../../plugins/validation.js'
import { page } from '../../schemas/page.js'
import { toPublic, type AccountsContext } from './context.js'
import { EmailTaken, LastSuperuser, UserNotFound, WrongCurrentPassword } from './errors.js'

type Change = Partial<NewUserRow> & { password?: string }

/** The current user's profile, and the superuser's administration of every account. */
export function usersRoutes (app: App, ctx: AccountsContext) {
  const { users, sessions, schemas, mail } = ctx

  /**
   * Applies a change to `current`, never demoting or deactivating the last active superuser. A new
   * password or a deactivation ends every session; a new email is unverified (unless the change
   * says otherwise) and gets a link to verify it.
   */
  async function change (request: FastifyRequest, current: UserRow, values: Change) {
    const { password, ...rest } = values
    const moved = rest.email !== undefined && rest.email.toLowerCase() !== current.email
    const unverify = moved && rest.is_verified === undefined
    const change = {
      ...rest,
      ...(unverify ? { is_verified: false } : {}),
      ...(password ? { hashed_password: await hashPassword(password) } : {})
    }
    const demotes = values.is_superuser === false || values.is_active === false
    const updated = demotes
      ? await users.unlessLastSuperuser(current.id, (tx) => users.update(current.id, change, tx))
      : await users.update(current.id, change)
    if (updated === 'last_superuser') throw new LastSuperuser()
    if (updated === 'email_taken') throw new EmailTaken(String(values.email).toLowerCase())
    if (!updated) throw new UserNotFound(current.id)
    if (password || values.is_active === false) await sessions.revokeAll(current.id)
    if (unverify) await mail.verify(request, updated)
    return toPublic(updated)
  }

  async function remove (id: number) {
    const outcome = await users.deleteAccount(id)
    if (outcome === 'not_found') throw new UserNotFound(id)
    if (outcome === 'last_superuser') throw new LastSuperuser()
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
    return change(request, request.account, { email, password })
  })

  app.delete('/users/me', {
    onRequest: app.authenticate,
    schema: schemas.deleteMe
  }, async function deleteMe (request, reply) {
    if (!await verifyPassword(request.account.hashed_password, request.body.current_password)) throw new WrongCurrentPassword()
    await remove(request.account.id)
    request.log.info({ userId: request.account.id }, 'account deleted by its owner')
    return reply.code(204).send(null)
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

  app.post('/users', {
    onRequest: app.requireSuperuser,
    schema: schemas.createUser
  }, async function createUser (request, reply) {
    const { password, scopes, ...rest } = request.body
    const user = await users.create({ ...rest, scopes: scopes && scopeText(scopes), hashed_password: await hashPassword(password) })
    if (!user) throw new EmailTaken(rest.email.toLowerCase())
    if (!user.is_verified) await mail.verify(request, user)
    return reply.code(201).send(toPublic(user))
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
    const current = await users.get(request.params.user_id)
    if (!current) throw new UserNotFound(request.params.user_id)
    return change(request, current, { ...rest, scopes: scopes && scopeText(scopes) })
  })

  app.delete('/users/:user_id', {
    onRequest: app.requireSuperuser,
    schema: schemas.deleteUser
  }, async function deleteUser (request, reply) {
    await remove(request.params.user_id)
    return reply.code(204).send(null)
  })
}
