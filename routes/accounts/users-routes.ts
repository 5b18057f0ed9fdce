import { Type } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Versioned } from '../../db/crud.js'
import type { NewUserRow, UserRow } from '../../db/users.js'
import { scopeText } from '../../db/users.js'
import { hashPassword } from '../../plugins/auth/passwords.js'
import { conditionalWrite, ifMatchVersions, rowEtags } from '../../http/conditional.js'
import { sendCreated } from '../../http/created.js'
import type { App } from '../../http/types.js'
import { ref } from '../../schemas/common.js'
import { ConditionalRead, ConditionalWrite, created, withEtag } from '../../schemas/conditional.js'
import { problemResponses, type ProblemExample } from '../../schemas/error.js'
import { IdempotentCreate } from '../../schemas/idempotency.js'
import { page, pageQuery } from '../../schemas/page.js'
import { NoticeSchema } from '../../schemas/recovery.js'
import {
  MeDeleteSchema, MeUpdateSchema, ScopesSchema, UserAdminUpdateSchema, UserCreateSchema, UserIdParams, UserPageSchema, UserSchema
} from '../../schemas/user.js'
import { toPublic, type AccountsContext } from './context.js'
import { EmailTaken, LastSuperuser, UserNotFound, WrongCurrentPassword, accountProblems, tooManyMails } from './errors.js'
import { checkCurrentPassword, hashShare } from './password-check.js'
import { limit } from '../../http/rate-limits.js'
import { emailTakenOrInFlight, passwordChecked, security, userNotFound } from './schemas.js'

type Change = Partial<NewUserRow> & { password?: string }

const userTags = ['users']
/** The columns a guard reads beside the session: a change to one makes the account's open streams check their guard. */
const RIGHTS = ['is_active', 'is_superuser', 'is_verified', 'scopes'] as const
const lastSuperuser: ProblemExample = [...LastSuperuser.example(), 'It is the last active superuser']

/** The current user's profile, and the superuser's administration of every account. */
export function usersRoutes (app: App, ctx: AccountsContext) {
  const { users, sessions, mail } = ctx
  const checksPassword = ctx.rateLimits.passwordCheck > 0 || ctx.loginMaxFailures > 0 || ctx.maxHashWaitingPerClient > 0 ? [passwordChecked] : []
  const etags = rowEtags(app, 'users')

  /** Applies a change to `current`, never demoting or deactivating the last active superuser. A new password or a
   * deactivation ends every session; a new email, set here only by a superuser, is unverified and gets a link. */
  async function change (request: FastifyRequest, reply: FastifyReply, current: Versioned<UserRow>, values: Change) {
    const { password, ...rest } = values
    const moved = rest.email !== undefined && rest.email.toLowerCase() !== current.email
    const unverify = moved && rest.is_verified === undefined
    const demotes = values.is_superuser === false || values.is_active === false
    const updated = await conditionalWrite(request, {
      ...conditions(current.id, current),
      async write (ifVersions) {
        // Hashed once If-Match has passed: a refused write never waits in the hash queue.
        const change = {
          ...rest,
          ...(unverify ? { is_verified: false } : {}),
          ...(password ? { hashed_password: await hashPassword(password, { queue: ctx.passwordQueue, share: hashShare(ctx, request, current.email) }) } : {})
        }
        const written = demotes
          ? await users.unlessLastSuperuser(current.id, (tx) => users.update(current.id, change, { tx, ifVersions }))
          : await users.update(current.id, change, { ifVersions })
        if (written === 'last_superuser') throw new LastSuperuser()
        if (written === 'email_taken') throw new EmailTaken(String(values.email).toLowerCase())
        return written
      }
    })
    if (password || values.is_active === false) await sessions.revokeAll(current.id)
    // What the guards read changed: the account's open event streams check theirs now.
    if (RIGHTS.some((key) => values[key] !== undefined)) await sessions.accountChanged(current.id)
    if (unverify) await mail.verify(request, updated)
    reply.header('etag', etags.of(updated))
    return toPublic(updated)
  }

  const conditions = (id: number, current?: Versioned<UserRow>) => ({
    etags, requireIfMatch: ctx.requireIfMatch, id, what: `user ${id}`, current, exists: () => users.get(id), missing: () => new UserNotFound(id)
  })

  /** Mails a link to move the user to `address`, and a notice to the current address if verified; the email stays until the link is followed. */
  async function askEmailChange (request: FastifyRequest, reply: FastifyReply, address: string, password?: string) {
    const { account } = request
    ifMatchVersions(request, conditions(account.id, account))
    // Registration tells anyone whether an address is taken, so this answer tells nothing more.
    if (await users.findByEmail(address)) throw new EmailTaken(address)
    const capped = await mail.emailChangeWait(account, address)
    if (capped !== null) throw tooManyMails(capped.email, capped.wait)
    // The link is bound to the password, so it is issued after a new one is set.
    if (password !== undefined) await change(request, reply, account, { password })
    await mail.changeEmail(request, account, address)
    return reply.code(202).send({ detail: `A link to confirm ${address} has been sent to it; until it is followed, the login email stays ${account.email}` })
  }

  /** Deletes the account, only in a version If-Match allows (when it names any); `current` is its last read. */
  async function remove (request: FastifyRequest, id: number, current?: Versioned<UserRow>) {
    await conditionalWrite(request, {
      ...conditions(id, current),
      async write (ifVersions) {
        const outcome = await users.deleteAccount(id, { ifVersions })
        if (outcome === 'last_superuser') throw new LastSuperuser()
        return outcome === 'deleted'
      }
    })
    await sessions.accountChanged(id)
  }

  app.get('/users/me', {
    onRequest: app.plinthGuards.authenticate,
    schema: {
      operationId: 'getMe',
      summary: 'The current user',
      tags: userTags,
      security,
      headers: ConditionalRead.headers,
      response: { 200: withEtag(ref(UserSchema)), ...ConditionalRead.notModified, ...problemResponses(401, 403) }
    }
  }, async function getMe (request, reply) {
    return etags.notModified(request, reply, request.account) ? reply : toPublic(request.account)
  })

  app.patch('/users/me', {
    onRequest: app.plinthGuards.authenticate,
    schema: {
      operationId: 'updateMe',
      summary: 'Change the current user\'s password, or ask to change the email (either needs current_password)',
      description: 'A new password is set at once and ends every session (200). A new email is not: the answer is 202, a link to confirm it ' +
        'is mailed to the new address and a notice to the current one if it is verified, and the email changes only when the link is followed ' +
        '(`POST /auth/confirm-email`). A new password in the same request is set at once.',
      tags: userTags,
      security,
      body: MeUpdateSchema(ctx.passwordMinLength),
      headers: ConditionalWrite.headers,
      response: {
        200: withEtag(ref(UserSchema)),
        202: ref(NoticeSchema),
        ...problemResponses(401, [...WrongCurrentPassword.example(),
          'current_password is wrong (ACCOUNT_WRONG_PASSWORD), or the account is inactive (AUTH_INACTIVE_USER)'],
        [...EmailTaken.example('ada@example.com'), 'The new email belongs to another account'], 412, 422, 428,
        [...accountProblems.TooManyMails.example('ada@example.com', 1800),
          'Too many confirmation links to the new email, or email changes asked for by this account (MAIL_RATE_LIMITED); or, where password checks are throttled, too many requests from this address ' +
          '(RATE_LIMITED), failed password checks (AUTH_TOO_MANY_FAILURES) or password hashes waiting (TOO_MANY_PASSWORD_HASHES); retry after Retry-After seconds'])
      }
    },
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
    schema: {
      operationId: 'deleteMe',
      summary: 'Delete the current user\'s account (needs current_password)',
      description: 'Deletes the account with its sessions, its mailed tokens and the rows it owns in owner-mode resources. ' +
        'The last active superuser cannot delete itself.',
      tags: userTags,
      security,
      body: MeDeleteSchema,
      headers: ConditionalWrite.headers,
      response: {
        204: Type.Null({ description: 'Deleted' }),
        ...problemResponses(401, 403, lastSuperuser, 412, 422, 428, ...checksPassword)
      }
    },
    config: limit(ctx.rateLimits.passwordCheck, ctx.rateLimits.windowSeconds)
  }, async function deleteMe (request, reply) {
    await checkCurrentPassword(ctx, request, request.account, request.body.current_password)
    await remove(request, request.account.id, request.account)
    request.log.info({ userId: request.account.id }, 'account deleted by its owner')
    return reply.code(204).send(null)
  })

  app.get('/users/me/scopes', {
    onRequest: app.plinthGuards.requireScopes('me'),
    schema: {
      operationId: 'getMyScopes',
      summary: 'The current user\'s scopes (needs scope "me")',
      tags: userTags,
      security: [{ OAuth2PasswordBearer: ['me'] }],
      response: { 200: ref(ScopesSchema), ...problemResponses(401, 403) }
    }
  }, async function getMyScopes (request) {
    return { scopes: toPublic(request.account).scopes }
  })

  app.get('/users', {
    onRequest: app.plinthGuards.requireSuperuser,
    schema: {
      operationId: 'listUsers',
      summary: 'Every account, a page at a time (superuser)',
      tags: userTags,
      security,
      querystring: Type.Object(pageQuery({ defaultLimit: ctx.defaultLimit, maxLimit: ctx.maxLimit }), { additionalProperties: false }),
      response: { 200: ref(UserPageSchema), ...problemResponses(401, 403, 422) }
    }
  }, async function listUsers (request) {
    const offset = request.query.offset
    const limit = Math.min(request.query.limit, ctx.maxLimit)
    const [rows, total] = await Promise.all([users.list({ offset, limit }), users.count()])
    return page(rows.map(toPublic), total, { offset, limit })
  })

  app.post('/users', {
    onRequest: app.plinthGuards.requireSuperuser,
    schema: {
      operationId: 'createUser',
      summary: 'Create an account with any flags and scopes (superuser)',
      description: 'An account created unverified gets a link to verify its email.',
      tags: userTags,
      security,
      body: UserCreateSchema(ctx.passwordMinLength),
      headers: IdempotentCreate.headers,
      response: { 201: created(ref(UserSchema)), ...problemResponses(401, 403, emailTakenOrInFlight, 422) }
    },
    ...ctx.idempotent
  }, async function createUser (request, reply) {
    const { password, scopes, ...rest } = request.body
    const user = await users.create({ ...rest, scopes: scopes && scopeText(scopes), hashed_password: await hashPassword(password, { queue: ctx.passwordQueue, share: hashShare(ctx, request) }) })
    if (!user) throw new EmailTaken(rest.email.toLowerCase())
    if (!user.is_verified) await mail.verify(request, user)
    return sendCreated(reply, request, user, { etag: etags.of(user), body: toPublic(user) })
  })

  app.get('/users/:user_id', {
    onRequest: app.plinthGuards.requireSuperuser,
    schema: {
      operationId: 'getUser',
      summary: 'One account (superuser)',
      tags: userTags,
      security,
      params: UserIdParams,
      headers: ConditionalRead.headers,
      response: { 200: withEtag(ref(UserSchema)), ...ConditionalRead.notModified, ...problemResponses(401, 403, userNotFound, 422) }
    }
  }, async function getUser (request, reply) {
    const user = await users.get(request.params.user_id)
    if (!user) throw new UserNotFound(request.params.user_id)
    return etags.notModified(request, reply, user) ? reply : toPublic(user)
  })

  app.patch('/users/:user_id', {
    onRequest: app.plinthGuards.requireSuperuser,
    schema: {
      operationId: 'updateUser',
      summary: 'Change an account, its flags and scopes included (superuser)',
      tags: userTags,
      security,
      params: UserIdParams,
      description: 'The last active superuser cannot be demoted or deactivated (409 ACCOUNT_LAST_SUPERUSER).',
      body: UserAdminUpdateSchema(ctx.passwordMinLength),
      headers: ConditionalWrite.headers,
      response: {
        200: withEtag(ref(UserSchema)),
        ...problemResponses(401, 403, userNotFound, [...EmailTaken.example('ada@example.com'),
          'The email is already registered (ACCOUNT_EMAIL_TAKEN), or the change would leave no active superuser (ACCOUNT_LAST_SUPERUSER)'], 412, 422, 428)
      }
    }
  }, async function updateUser (request, reply) {
    const { scopes, ...rest } = request.body
    const current = await users.get(request.params.user_id)
    if (!current) throw new UserNotFound(request.params.user_id)
    return change(request, reply, current, { ...rest, scopes: scopes && scopeText(scopes) })
  })

  app.delete('/users/:user_id', {
    onRequest: app.plinthGuards.requireSuperuser,
    schema: {
      operationId: 'deleteUser',
      summary: 'Delete an account and its sessions (superuser)',
      description: 'As DELETE /users/me: the rows it owns go with it, and the last active superuser stays.',
      tags: userTags,
      security,
      params: UserIdParams,
      headers: ConditionalWrite.headers,
      response: {
        204: Type.Null({ description: 'Deleted' }),
        ...problemResponses(401, 403, userNotFound, lastSuperuser, 412, 422, 428)
      }
    }
  }, async function deleteUser (request, reply) {
    await remove(request, request.params.user_id)
    return reply.code(204).send(null)
  })
}
