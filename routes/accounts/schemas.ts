import { STATUS_CODES } from 'node:http'
import { ConditionalRead, ConditionalWrite, created, withEtag } from '../../schemas/conditional.js'
import { IdempotentCreate } from '../../schemas/idempotency.js'
import { Type } from '@sinclair/typebox'
import { ref } from '../../schemas/common.js'
import { problemResponses, type ProblemExample } from '../../schemas/error.js'
import { pageQuery } from '../../schemas/page.js'
import { MySessionParams, SessionPageSchema, UserSessionParams } from '../../schemas/session.js'
import { OAuthErrorSchema, RefreshRequestSchema, RefreshScopeRequestSchema, RevocationRequestSchema, TokenPairSchema, TokenRequestSchema } from '../../schemas/token.js'
import { ForgotPasswordSchema, NoticeSchema, ResetPasswordSchema, VerifySchema } from '../../schemas/recovery.js'
import {
  MeDeleteSchema, MeUpdateSchema, RegisterSchema, ScopesSchema, UserAdminUpdateSchema, UserCreateSchema, UserIdParams, UserPageSchema, UserSchema
} from '../../schemas/user.js'

const authTags = ['auth']
const userTags = ['users']
const sessionTags = ['sessions']
const security = [{ OAuth2PasswordBearer: [] }]
/** A token endpoint error response: application/json, RFC 6749's members and the problem's. */
function oauthError (description: string, [error, code, detail]: [string, string, string]) {
  const status = error === 'invalid_client' ? 401 : 400
  return {
    description,
    content: {
      'application/json': {
        schema: ref(OAuthErrorSchema),
        example: { error, error_description: detail, type: 'about:blank', title: STATUS_CODES[status], status, detail, code }
      }
    }
  }
}

const missing: ProblemExample = [404, 'ACCOUNT_USER_NOT_FOUND', 'user 7 not found']
const lastSuperuser: ProblemExample = [409, 'ACCOUNT_LAST_SUPERUSER',
  'This is the last active superuser: make another account an active superuser first, so the service keeps one', 'It is the last active superuser']
const noSession: ProblemExample = [404, 'ACCOUNT_SESSION_NOT_FOUND', 'session 0b6c1f0e-8a1d-4e51-9d5c-2f4f5a7e9c10 not found']

/** The route schemas of the accounts profile; password and page limits come from its options. */
const emailTakenOrInFlight: ProblemExample = [409, 'ACCOUNT_EMAIL_TAKEN', 'The email ada@example.com is already registered',
  'The email is already registered (ACCOUNT_EMAIL_TAKEN), or the request first sent with this Idempotency-Key is still in progress (IDEMPOTENCY_KEY_IN_FLIGHT)']

/** The 429 of a route that checks a password. */
const passwordChecked: ProblemExample = [429, 'AUTH_TOO_MANY_FAILURES', 'Too many failed logins for this account from this address; retry in 840 seconds',
  'Too many requests from this address (RATE_LIMITED), failed password checks of this account from it (AUTH_TOO_MANY_FAILURES), ' +
  'or password hashes of either waiting (TOO_MANY_PASSWORD_HASHES); retry after Retry-After seconds']

export function accountsSchemas ({ passwordMinLength, defaultLimit, maxLimit, rateLimits, loginMaxFailures, maxHashWaitingPerClient }: {
  passwordMinLength: number
  defaultLimit: number
  maxLimit: number
  loginMaxFailures: number
  maxHashWaitingPerClient: number
  rateLimits: Record<'register' | 'token' | 'refresh' | 'revoke' | 'passwordReset' | 'verify' | 'passwordCheck', number>
}) {
  // A route with a rate limit may answer 429.
  const limited = (route: keyof typeof rateLimits, path: string): ProblemExample[] => rateLimits[route] > 0
    ? [[429, 'RATE_LIMITED', `Too many requests to /api/v1/auth/${path} from this address; retry in 42 seconds`]]
    : []
  // Registration hashes a password within its address's share of the hash queue.
  const registerLimited: ProblemExample[] = rateLimits.register > 0 || maxHashWaitingPerClient > 0
    ? [[429, 'RATE_LIMITED', 'Too many requests to /api/v1/auth/register from this address; retry in 42 seconds',
        'Too many requests from this address (RATE_LIMITED), or too many of its password hashes waiting (TOO_MANY_PASSWORD_HASHES); retry after Retry-After seconds']]
    : []
  const checksPassword = rateLimits.passwordCheck > 0 || loginMaxFailures > 0 || maxHashWaitingPerClient > 0 ? [passwordChecked] : []
  return {
    register: {
      operationId: 'register',
      summary: 'Create an account',
      tags: authTags,
      description: 'The new account is unverified; a link to verify its email is mailed to it.',
      body: RegisterSchema(passwordMinLength),
      headers: IdempotentCreate.headers,
      response: { 201: ref(UserSchema), ...problemResponses(emailTakenOrInFlight, 422, ...registerLimited) }
    },
    forgotPassword: {
      operationId: 'forgotPassword',
      summary: 'Mail a link to reset the password of the account with this email, if there is one',
      description: 'Always 202 with the same body, answered before the email is looked up, so it takes the same time whether or not an active account has it. ' +
        'The link works once, for a limited time, and only while the password and the email stay as they are.',
      tags: authTags,
      body: ForgotPasswordSchema,
      response: { 202: ref(NoticeSchema), ...problemResponses(422, ...limited('passwordReset', 'forgot-password')) }
    },
    resetPassword: {
      operationId: 'resetPassword',
      summary: 'Set a new password with the token of a mailed reset link; every session ends',
      tags: authTags,
      body: ResetPasswordSchema(passwordMinLength),
      response: {
        204: Type.Null({ description: 'The password is changed, the email counts as verified, and every session has ended' }),
        ...problemResponses([400, 'AUTH_INVALID_RESET_TOKEN', 'Invalid password reset token: it is unknown or was already used',
          'The token is unknown, already used, expired, or its password or email changed since (AUTH_INVALID_RESET_TOKEN); or the body does not parse'], 422,
        ...limited('passwordReset', 'reset-password'))
      }
    },
    requestVerification: {
      operationId: 'requestVerification',
      summary: 'Mail a link to verify the current user\'s email',
      tags: authTags,
      security,
      response: {
        202: ref(NoticeSchema),
        ...problemResponses(401, 403, [409, 'ACCOUNT_ALREADY_VERIFIED', 'The email ada@example.com is already verified', 'The email is already verified'],
          [429, 'MAIL_RATE_LIMITED', 'Too many mails of this kind to ada@example.com; retry in 1800 seconds',
            'Too many requests from this address (RATE_LIMITED), or mails to this email (MAIL_RATE_LIMITED); retry after Retry-After seconds'])
      }
    },
    verify: {
      operationId: 'verifyEmail',
      summary: 'Verify an email with the token of a mailed link',
      tags: authTags,
      body: VerifySchema,
      response: {
        200: ref(UserSchema),
        ...problemResponses([400, 'AUTH_INVALID_VERIFY_TOKEN', 'Invalid verification token: it has expired; ask for a new link',
          'The token is unknown, already used, expired, or the email changed since (AUTH_INVALID_VERIFY_TOKEN); or the body does not parse'], 422,
        ...limited('verify', 'verify'))
      }
    },
    confirmEmail: {
      operationId: 'confirmEmail',
      summary: 'Change the email with the token of a link mailed to the new address; every session ends',
      description: 'The token comes from the link `PATCH /users/me` mails to the new address. It works once, for as long as a reset link, ' +
        'and only while the account\'s password and email stay as they were and it stays active.',
      tags: authTags,
      body: VerifySchema,
      response: {
        200: ref(UserSchema),
        ...problemResponses([400, 'AUTH_INVALID_EMAIL_CHANGE_TOKEN', 'Invalid email change token: it has expired; ask again',
          'The token is unknown, already used, expired, or the password or email changed since (AUTH_INVALID_EMAIL_CHANGE_TOKEN); or the body does not parse'],
        [409, 'ACCOUNT_EMAIL_TAKEN', 'The email ada@example.com is already registered', 'Another account has registered the new email since the link was sent'],
        422, ...limited('verify', 'confirm-email'))
      }
    },
    token: {
      operationId: 'login',
      summary: 'The OAuth 2.0 token endpoint: log in with the password grant, or refresh',
      description: 'RFC 6749: `grant_type=password` (the default; `username` is the email) or `grant_type=refresh_token`, ' +
        'as a form or JSON. `scope` narrows the token to some of the account\'s scopes. Errors are RFC 6749 section 5.2 errors, ' +
        'which are problem documents too; 429 and 503 are problem documents.',
      tags: authTags,
      consumes: ['application/x-www-form-urlencoded', 'application/json'],
      body: TokenRequestSchema,
      response: {
        200: ref(TokenPairSchema),
        400: oauthError('invalid_request, invalid_grant (wrong credentials, an inactive account, a bad or spent refresh token), ' +
          'unsupported_grant_type or invalid_scope', ['invalid_grant', 'AUTH_INVALID_CREDENTIALS', 'Incorrect email or password']),
        401: oauthError('invalid_client: the HTTP Basic credentials do not decode',
          ['invalid_client', 'AUTH_INVALID_CLIENT', 'Client authentication failed: the Basic credentials are not base64 of client_id:client_secret']),
        ...problemResponses(passwordChecked, 503)
      }
    },
    revoke: {
      operationId: 'revoke',
      summary: 'Revoke a token (RFC 7009): always 200, whatever the token',
      description: 'A refresh or access token of this server ends its session: its refresh token and its access tokens stop working.',
      tags: authTags,
      consumes: ['application/x-www-form-urlencoded', 'application/json'],
      body: RevocationRequestSchema,
      response: {
        200: Type.Null({ description: 'Revoked, or nothing to revoke' }),
        400: oauthError('invalid_request: no token', ['invalid_request', 'AUTH_INVALID_REQUEST', 'token is required']),
        401: oauthError('invalid_client: the HTTP Basic credentials do not decode',
          ['invalid_client', 'AUTH_INVALID_CLIENT', 'Client authentication failed: the Basic credentials are not base64 of client_id:client_secret']),
        ...problemResponses(...limited('revoke', 'revoke'), 503)
      }
    },
    refresh: {
      operationId: 'refresh',
      summary: 'Exchange a refresh token for a new pair (the presented token is revoked)',
      description: '`scope` narrows the new pair, as the token endpoint\'s refresh grant does; each must be in the login\'s narrowing and granted to the account.',
      tags: authTags,
      body: RefreshScopeRequestSchema,
      response: {
        200: ref(TokenPairSchema),
        ...problemResponses([400, 'AUTH_INVALID_SCOPE', 'scope not granted: admin',
          'A scope the account lacks, or wider than the login\'s (AUTH_INVALID_SCOPE), the token left unspent; or the body does not parse'],
        401, 403, 422, ...limited('refresh', 'refresh'))
      }
    },
    logout: {
      operationId: 'logout',
      summary: 'End the session of this refresh token',
      tags: authTags,
      body: RefreshRequestSchema,
      response: { 204: Type.Null({ description: 'Ended' }), ...problemResponses(401, 422, ...limited('revoke', 'logout')) }
    },
    logoutAll: {
      operationId: 'logoutAll',
      summary: 'End every session of the current user, this one included',
      tags: authTags,
      security,
      response: { 204: Type.Null({ description: 'Ended' }), ...problemResponses(401, 403) }
    },
    logoutOthers: {
      operationId: 'logoutOthers',
      summary: 'End every session of the current user but this one',
      tags: authTags,
      security,
      response: { 204: Type.Null({ description: 'Ended' }), ...problemResponses(401, 403) }
    },
    listMySessions: {
      operationId: 'listMySessions',
      summary: 'The current user\'s live sessions, newest first; `current` marks this one',
      tags: sessionTags,
      security,
      querystring: Type.Object(pageQuery({ defaultLimit, maxLimit, offset: 'Sessions to skip, newest first' }), { additionalProperties: false }),
      response: { 200: ref(SessionPageSchema), ...problemResponses(401, 403, 422) }
    },
    endMySession: {
      operationId: 'endMySession',
      summary: 'End one of the current user\'s sessions: its refresh token and access tokens stop working',
      tags: sessionTags,
      security,
      params: MySessionParams,
      response: { 204: Type.Null({ description: 'Ended' }), ...problemResponses(401, 403, noSession, 422) }
    },
    listUserSessions: {
      operationId: 'listUserSessions',
      summary: 'An account\'s live sessions, newest first (superuser)',
      tags: sessionTags,
      security,
      params: UserIdParams,
      querystring: Type.Object(pageQuery({ defaultLimit, maxLimit, offset: 'Sessions to skip, newest first' }), { additionalProperties: false }),
      response: { 200: ref(SessionPageSchema), ...problemResponses(401, 403, missing, 422) }
    },
    endUserSession: {
      operationId: 'endUserSession',
      summary: 'End one session of an account (superuser)',
      tags: sessionTags,
      security,
      params: UserSessionParams,
      response: { 204: Type.Null({ description: 'Ended' }), ...problemResponses(401, 403, noSession, 422) }
    },
    getMe: {
      operationId: 'getMe',
      summary: 'The current user',
      tags: userTags,
      security,
      headers: ConditionalRead.headers,
      response: { 200: withEtag(ref(UserSchema)), ...ConditionalRead.notModified, ...problemResponses(401, 403) }
    },
    updateMe: {
      operationId: 'updateMe',
      summary: 'Change the current user\'s password, or ask to change the email (either needs current_password)',
      description: 'A new password is set at once and ends every session (200). A new email is not: the answer is 202, a link to confirm it ' +
        'is mailed to the new address and a notice to the current one, and the email changes only when the link is followed ' +
        '(`POST /auth/confirm-email`). A new password in the same request is set at once.',
      tags: userTags,
      security,
      body: MeUpdateSchema(passwordMinLength),
      headers: ConditionalWrite.headers,
      response: {
        200: withEtag(ref(UserSchema)),
        202: ref(NoticeSchema),
        ...problemResponses(401, [403, 'ACCOUNT_WRONG_PASSWORD', 'current_password is incorrect',
          'current_password is wrong (ACCOUNT_WRONG_PASSWORD), or the account is inactive (AUTH_INACTIVE_USER)'],
        [409, 'ACCOUNT_EMAIL_TAKEN', 'The email ada@example.com is already registered', 'The new email belongs to another account'], 412, 422, 428,
        [429, 'MAIL_RATE_LIMITED', 'Too many mails of this kind to ada@example.com; retry in 1800 seconds',
          'Too many confirmation links to the new email (MAIL_RATE_LIMITED); or, where password checks are throttled, too many requests from this address ' +
          '(RATE_LIMITED), failed password checks (AUTH_TOO_MANY_FAILURES) or password hashes waiting (TOO_MANY_PASSWORD_HASHES); retry after Retry-After seconds'])
      }
    },
    deleteMe: {
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
    getMyScopes: {
      operationId: 'getMyScopes',
      summary: 'The current user\'s scopes (needs scope "me")',
      tags: userTags,
      security: [{ OAuth2PasswordBearer: ['me'] }],
      response: { 200: ref(ScopesSchema), ...problemResponses(401, 403) }
    },
    listUsers: {
      operationId: 'listUsers',
      summary: 'Every account, a page at a time (superuser)',
      tags: userTags,
      security,
      querystring: Type.Object(pageQuery({ defaultLimit, maxLimit }), { additionalProperties: false }),
      response: { 200: ref(UserPageSchema), ...problemResponses(401, 403, 422) }
    },
    createUser: {
      operationId: 'createUser',
      summary: 'Create an account with any flags and scopes (superuser)',
      description: 'An account created unverified gets a link to verify its email.',
      tags: userTags,
      security,
      body: UserCreateSchema(passwordMinLength),
      headers: IdempotentCreate.headers,
      response: { 201: created(ref(UserSchema)), ...problemResponses(401, 403, emailTakenOrInFlight, 422) }
    },
    getUser: {
      operationId: 'getUser',
      summary: 'One account (superuser)',
      tags: userTags,
      security,
      params: UserIdParams,
      headers: ConditionalRead.headers,
      response: { 200: withEtag(ref(UserSchema)), ...ConditionalRead.notModified, ...problemResponses(401, 403, missing, 422) }
    },
    updateUser: {
      operationId: 'updateUser',
      summary: 'Change an account, its flags and scopes included (superuser)',
      tags: userTags,
      security,
      params: UserIdParams,
      description: 'The last active superuser cannot be demoted or deactivated (409 ACCOUNT_LAST_SUPERUSER).',
      body: UserAdminUpdateSchema(passwordMinLength),
      headers: ConditionalWrite.headers,
      response: {
        200: withEtag(ref(UserSchema)),
        ...problemResponses(401, 403, missing, [409, 'ACCOUNT_EMAIL_TAKEN', 'The email ada@example.com is already registered',
          'The email is already registered (ACCOUNT_EMAIL_TAKEN), or the change would leave no active superuser (ACCOUNT_LAST_SUPERUSER)'], 412, 422, 428)
      }
    },
    deleteUser: {
      operationId: 'deleteUser',
      summary: 'Delete an account and its sessions (superuser)',
      description: 'As DELETE /users/me: the rows it owns go with it, and the last active superuser stays.',
      tags: userTags,
      security,
      params: UserIdParams,
      headers: ConditionalWrite.headers,
      response: {
        204: Type.Null({ description: 'Deleted' }),
        ...problemResponses(401, 403, missing, lastSuperuser, 412, 422, 428)
      }
    }
  }
}
