import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Versioned } from '../../db/crud.js'
import type { NewUserRow, UserRow } from '../../db/users.js'
import { scopeText } from '../../db/users.js'
import { hashPassword } from '../../plugins/auth/passwords.js'
import { preconditionFailed, refusal, rowEtags } from '../../http/conditional.js'
import { locationOf } from '../../http/idempotency.js'
import type { App } from '../../http/types.js'
import { page } from '../../schemas/page.js'
import { toPublic, type AccountsContext } from './context.js'
import { EmailTaken, LastSuperuser, UserNotFound, tooManyMails } from './errors.js'
import { checkCurrentPassword, hashShare } from './password-check.js'
import { limit } from '../../http/rate-limits.js'

type Change = Partial<NewUserRow> & { password?: string }

/** The current user's profile, and the superuser's administration of every account. */
export function usersRoutes (app: App, ctx: AccountsContext) {
  const { users, sessions, schemas, mail } = ctx
  const etags = rowEtags(app, 'users')

  /**
   * Applies a change to `current`, never demoting or deactivating the last active superuser. A new
   * password or a deactivation ends every session; a new email, which only a superuser sets here, is
   * unverified (unless the change says otherwise) and gets a link to verify it.
   */
  async function change (request: FastifyRequest, reply: FastifyReply, current: Versioned<UserRow>, values: Change) {
    const what = `user ${current.id}`
    const versions = precondition(request, current)
    const { password, ...rest } = values
    const moved = rest.email !== undefined && rest.email.toLowerCase() !== current.email
    const unverify = moved && rest.is_verified === undefined
    const change = {
      ...rest,
      ...(unverify ? { is_verified: false } : {}),
      ...(password ? { hashed_password: await hashPassword(password, ctx.passwordQueue, undefined, hashShare(ctx, request, current.email)) } : {})
    }
    const demotes = values.is_superuser === false || values.is_active === false
    const updated = demotes
      ? await users.unlessLastSuperuser(current.id, (tx) => users.update(current.id, change, tx, versions))
      : await users.update(current.id, change, undefined, versions)
    if (updated === 'last_superuser') throw new LastSuperuser()
    if (updated === 'email_taken') throw new EmailTaken(String(values.email).toLowerCase())
    if (!updated) throw await refusal(versions, () => users.get(current.id), new UserNotFound(current.id), what)
    if (password || values.is_active === false) await sessions.revokeAll(current.id)
    if (unverify) await mail.verify(request, updated)
    reply.header('etag', etags.of(updated))
    return toPublic(updated)
  }

  /** The versions If-Match names, if any; 412 when `current` is in none of them. */
  function precondition (request: FastifyRequest, current: Versioned<UserRow>) {
    const what = `user ${current.id}`
    const versions = etags.expectedVersions(request, ctx.requireIfMatch, current.id, what)
    if (versions && !versions.includes(current.version)) throw preconditionFailed(what)
    return versions
  }

  /**
   * Asks to move the current user to `address`: a link to confirm it is mailed there, a notice to the
   * current email. Until the link is followed the email stays; a new password, if any, is set now.
   */
  async function askEmailChange (request: FastifyRequest, reply: FastifyReply, address: string, password?: string) {
    const { account } = request
    precondition(request, account)
    // Registration tells anyone whether an address is taken, so this answer tells nothing more.
    if (await users.findByEmail(address)) throw new EmailTaken(address)
    const wait = await mail.emailChangeWait(address)
    if (wait > 0) throw tooManyMails(address, wait)
    // The link is bound to the password, so it is issued after a new one is set.
    if (password !== undefined) await change(request, reply, account, { password })
    await mail.changeEmail(request, account, address)
    return reply.code(202).send({ detail: `A link to confirm ${address} has been sent to it; until it is followed, the login email stays ${account.email}` })
  }

  /** Deletes the account, only in a version If-Match allows (when it names any); `current` is its last read. */
  async function remove (request: FastifyRequest, id: number, current?: Versioned<UserRow>) {
    const what = `user ${id}`
    const versions = etags.expectedVersions(request, ctx.requireIfMatch, id, what)
    if (versions && current && !versions.includes(current.version)) throw preconditionFailed(what)
    const outcome = await users.deleteAccount(id, versions)
    if (outcome === 'not_found') throw await refusal(versions, () => users.get(id), new UserNotFound(id), what)
    if (outcome === 'last_superuser') throw new LastSuperuser()
  }

  app.get('/users/me', {
    onRequest: app.plinthGuards.authenticate,
    schema: schemas.getMe
  }, async function getMe (request, reply) {
    return etags.notModified(request, reply, request.account) ? reply : toPublic(request.account)
  })

  app.patch('/users/me', {
    onRequest: app.plinthGuards.authenticate,
    schema: schemas.updateMe,
    config: limit(ctx.rateLimits.passwordCheck, ctx.rateLimits.windowSeconds)
  }, async function updateMe (request, reply) {
    const { email, password, current_password: current } = request.body
    if (password !== undefined || email !== undefined) await checkCurrentPassword(ctx, request, request.account, current ?? '')
    const moveTo = email?.toLowerCase()
    if (moveTo !== undefined && moveTo !== request.account.email) return askEmailChange(request, reply, moveTo, password)
    return change(request, reply, request.account, { password })
  })

  app.delete('/users/me', {
    onRequest: app.plinthGuards.authenticate,
    schema: schemas.deleteMe,
    config: limit(ctx.rateLimits.passwordCheck, ctx.rateLimits.windowSeconds)
  }, async function deleteMe (request, reply) {
    await checkCurrentPassword(ctx, request, request.account, request.body.current_password)
    await remove(request, request.account.id, request.account)
    request.log.info({ userId: request.account.id }, 'account deleted by its owner')
    return reply.code(204).send(null)
  })

  app.get('/users/me/scopes', {
    onRequest: app.plinthGuards.requireScopes('me'),
    schema: schemas.getMyScopes
  }, async function getMyScopes (request) {
    return { scopes: toPublic(request.account).scopes }
  })

  app.get('/users', {
    onRequest: app.plinthGuards.requireSuperuser,
    schema: schemas.listUsers
  }, async function listUsers (request) {
    const offset = request.query.offset
    const limit = Math.min(request.query.limit, ctx.maxLimit)
    const [rows, total] = await Promise.all([users.list({ offset, limit }), users.count()])
    return page(rows.map(toPublic), total, { offset, limit })
  })

  app.post('/users', {
    onRequest: app.plinthGuards.requireSuperuser,
    schema: schemas.createUser,
    ...ctx.idempotent
  }, async function createUser (request, reply) {
    const { password, scopes, ...rest } = request.body
    const user = await users.create({ ...rest, scopes: scopes && scopeText(scopes), hashed_password: await hashPassword(password, ctx.passwordQueue, undefined, hashShare(ctx, request)) })
    if (!user) throw new EmailTaken(rest.email.toLowerCase())
    if (!user.is_verified) await mail.verify(request, user)
    return reply.code(201).headers({ location: locationOf(request, user.id), etag: etags.of(user) }).send(toPublic(user))
  })

  app.get('/users/:user_id', {
    onRequest: app.plinthGuards.requireSuperuser,
    schema: schemas.getUser
  }, async function getUser (request, reply) {
    const user = await users.get(request.params.user_id)
    if (!user) throw new UserNotFound(request.params.user_id)
    return etags.notModified(request, reply, user) ? reply : toPublic(user)
  })

  app.patch('/users/:user_id', {
    onRequest: app.plinthGuards.requireSuperuser,
    schema: schemas.updateUser
  }, async function updateUser (request, reply) {
    const { scopes, ...rest } = request.body
    const current = await users.get(request.params.user_id)
    if (!current) throw new UserNotFound(request.params.user_id)
    return change(request, reply, current, { ...rest, scopes: scopes && scopeText(scopes) })
  })

  app.delete('/users/:user_id', {
    onRequest: app.plinthGuards.requireSuperuser,
    schema: schemas.deleteUser
  }, async function deleteUser (request, reply) {
    await remove(request, request.params.user_id)
    return reply.code(204).send(null)
  })
}
