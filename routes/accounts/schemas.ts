import { Type } from '@sinclair/typebox'
import { ref } from '../../schemas/common.js'
import { problemResponses, type ProblemExample } from '../../schemas/error.js'
import { pageQuery } from '../../schemas/page.js'
import { LoginFormSchema, RefreshRequestSchema, TokenPairSchema } from '../../schemas/token.js'
import {
  MeUpdateSchema, RegisterSchema, ScopesSchema, UserAdminUpdateSchema, UserIdParams, UserPageSchema, UserSchema
} from '../../schemas/user.js'

const authTags = ['auth']
const userTags = ['users']
const security = [{ OAuth2PasswordBearer: [] }]
const missing: ProblemExample = [404, 'ACCOUNT_USER_NOT_FOUND', 'user 7 not found']

/** The route schemas of the accounts profile; password and page limits come from its options. */
export function accountsSchemas ({ passwordMinLength, defaultLimit, maxLimit }: { passwordMinLength: number, defaultLimit: number, maxLimit: number }) {
  return {
    register: {
      operationId: 'register',
      summary: 'Create an account',
      tags: authTags,
      body: RegisterSchema(passwordMinLength),
      response: { 201: ref(UserSchema), ...problemResponses(409, 422) }
    },
    login: {
      operationId: 'login',
      summary: 'Log in with the OAuth 2.0 password grant (form: username = email, password)',
      tags: authTags,
      consumes: ['application/x-www-form-urlencoded', 'application/json'],
      body: LoginFormSchema,
      response: { 200: ref(TokenPairSchema), ...problemResponses(401, 403, 422, 429) }
    },
    refresh: {
      operationId: 'refresh',
      summary: 'Exchange a refresh token for a new pair (the presented token is revoked)',
      tags: authTags,
      body: RefreshRequestSchema,
      response: { 200: ref(TokenPairSchema), ...problemResponses(401, 403, 422) }
    },
    logout: {
      operationId: 'logout',
      summary: 'Revoke one refresh token',
      tags: authTags,
      body: RefreshRequestSchema,
      response: { 204: Type.Null({ description: 'Revoked' }), ...problemResponses(401, 422) }
    },
    logoutAll: {
      operationId: 'logoutAll',
      summary: 'Revoke every refresh token of the current user',
      tags: authTags,
      security: [{ OAuth2PasswordBearer: [] }],
      response: { 204: Type.Null({ description: 'Revoked' }), ...problemResponses(401, 403) }
    },
    getMe: {
      operationId: 'getMe',
      summary: 'The current user',
      tags: userTags,
      security,
      response: { 200: ref(UserSchema), ...problemResponses(401, 403) }
    },
    updateMe: {
      operationId: 'updateMe',
      summary: 'Change the current user\'s email or password (a new password needs current_password)',
      tags: userTags,
      security,
      body: MeUpdateSchema(passwordMinLength),
      response: { 200: ref(UserSchema), ...problemResponses(401, 403, 409, 422) }
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
    getUser: {
      operationId: 'getUser',
      summary: 'One account (superuser)',
      tags: userTags,
      security,
      params: UserIdParams,
      response: { 200: ref(UserSchema), ...problemResponses(401, 403, missing, 422) }
    },
    updateUser: {
      operationId: 'updateUser',
      summary: 'Change an account, its flags and scopes included (superuser)',
      tags: userTags,
      security,
      params: UserIdParams,
      body: UserAdminUpdateSchema(passwordMinLength),
      response: { 200: ref(UserSchema), ...problemResponses(401, 403, missing, 409, 422) }
    },
    deleteUser: {
      operationId: 'deleteUser',
      summary: 'Delete an account and its sessions (superuser)',
      tags: userTags,
      security,
      params: UserIdParams,
      response: { 204: Type.Null({ description: 'Deleted' }), ...problemResponses(401, 403, missing, 422) }
    }
  }
}
