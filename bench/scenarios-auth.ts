import { randomUUID } from 'node:crypto'
import { call, formBody, times } from './http.js'
import type { Scenario } from './scenario.js'

const AUTH = '/api/v1/auth'
export const PASSWORD = 'bench password 1234'
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }

interface Pair { refresh_token: string }

/** A fresh account per scenario: its refresh tokens and login counters start clean. */
async function account (baseUrl: string) {
  const email = `bench-${randomUUID()}@example.com`
  await call(baseUrl, `${AUTH}/register`, { method: 'POST', body: { email, password: PASSWORD } })
  return { username: email, password: PASSWORD }
}

// Refresh tokens are single use. Every request takes one from the pool and its answer puts the
// new one back, so 50 connections never present the same token twice (which would be a replay,
// revoking the whole family). Tokens lost in flight when a run stops are replaced by fresh logins.
const POOL = 60
const pool: string[] = []
let login: (() => Promise<void>) | undefined

// The login route counts attempts per email until they succeed (LOGIN_MAX_FAILURES, 10): 50
// connections on one account would be refused with 429. Cycling through more accounts than
// connections keeps each account to about one attempt at a time, as real users are.
const ACCOUNTS = 64

/** GET /users/me with a fresh account's access token: the guard's verify and its one lookup. */
const guardedGet = (name: string, server?: Scenario['server']): Scenario => ({
  name,
  path: '/api/v1/users/me',
  server,
  setup: async (baseUrl) => {
    const { access_token: token } = await call<{ access_token: string }>(baseUrl, `${AUTH}/login`, { method: 'POST', form: await account(baseUrl) })
    return { headers: { authorization: `Bearer ${token}` } }
  }
})

/** GET /users/me from many users at once, each request with the token of the next of them. */
const manyUsersGet = (name: string, server?: Scenario['server']): Scenario => ({
  name,
  path: '/api/v1/users/me',
  server,
  setup: async (baseUrl) => {
    const tokens: string[] = []
    await times(ACCOUNTS, 4, async () => {
      tokens.push((await call<{ access_token: string }>(baseUrl, `${AUTH}/login`, { method: 'POST', form: await account(baseUrl) })).access_token)
    })
    let next = 0
    return { requests: [{ setupRequest: (request) => ({ ...request, headers: { ...request.headers, authorization: `Bearer ${tokens[next++ % tokens.length]}` } }) }] }
  }
})

export const authScenarios: Scenario[] = [
  guardedGet('me-get'),
  guardedGet('me-get-stateless', 'stateless'),
  manyUsersGet('me-get-many'),
  manyUsersGet('me-get-many-stateless', 'stateless'),
  guardedGet('me-eddsa', 'eddsa'),
  {
    name: 'login',
    method: 'POST',
    path: `${AUTH}/login`,
    headers: FORM,
    bound: 'argon2',
    setup: async (baseUrl) => {
      const bodies: string[] = []
      await times(ACCOUNTS, 4, async () => { bodies.push(formBody(await account(baseUrl))) })
      let next = 0
      return { requests: [{ setupRequest: (request) => ({ ...request, body: bodies[next++ % bodies.length] }) }] }
    }
  },
  {
    name: 'refresh',
    method: 'POST',
    path: `${AUTH}/refresh`,
    setup: async (baseUrl) => {
      const form = await account(baseUrl)
      login = async () => { pool.push((await call<Pair>(baseUrl, `${AUTH}/login`, { method: 'POST', form })).refresh_token) }
      return {
        requests: [{
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          setupRequest: (request) => ({ ...request, body: JSON.stringify({ refresh_token: pool.pop() ?? 'pool-empty' }) }),
          onResponse: (status, body) => { if (status === 200) pool.push((JSON.parse(body) as Pair).refresh_token) }
        }]
      }
    },
    beforeRun: async () => { await times(Math.max(0, POOL - pool.length), 8, () => login!()) }
  }
]
