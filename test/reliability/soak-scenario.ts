import { PASSWORD } from '../support/app.js'
import type { Client, Stream } from './soak-traffic.js'

/** Runs per second of each stream: about 43 requests a second. Login is argon2, so a few per second. */
const RATES = { login: 2, refresh: 5, me: 8, item: 2, record: 2, pages: 5 }

/** Refresh records revoked per second: each refresh rotates one, each login first logs one out. */
export const REVOKED_PER_SECOND = RATES.refresh + RATES.login

interface Session {
  email: string
  access: string
  refresh: string
  busy: boolean
}

const loginForm = (email: string) => ({ grant_type: 'password', username: email, password: PASSWORD })
const pick = <T>(list: T[]): T | undefined => list[Math.floor(Math.random() * list.length)]

/**
 * Registers and logs in `sessions` accounts and seeds the lists, so that pages have something to
 * page through; then the soak's streams keep the data set about this size.
 */
export async function setUp (http: Client, counts: { sessions: number, items: number, records: number }) {
  const sessions: Session[] = []
  for (let i = 0; i < counts.sessions; i++) {
    const email = `soak${i}@example.com`
    await http.send({ route: 'POST /auth/register', expected: 201, path: '/api/v1/auth/register', json: { email, password: PASSWORD } })
    const pair = await http.send({ route: 'POST /auth/login', expected: 200, path: '/api/v1/auth/login', form: loginForm(email) })
    sessions.push({ email, access: pair.access_token, refresh: pair.refresh_token, busy: false })
  }
  for (let i = 0; i < counts.items; i++) {
    await http.send({ route: 'POST /items', expected: 201, path: '/api/v1/items', json: { name: `seed ${i}`, price: i } })
  }
  for (let i = 0; i < counts.records; i++) {
    await http.send({ route: 'POST /records/', expected: 201, path: '/api/v1/records/', json: { title: `seed ${i}` } })
  }
  return sessions
}

/** The traffic mix. Every request names the one status it must get. */
export function streams (http: Client, sessions: Session[], seeded: { items: number, records: number }): Stream[] {
  const { send } = http
  let lastItemId = seeded.items
  let pageTurn = 0

  /**
   * A session no other run is using, marked busy. A run that fails leaves it busy: its tokens are
   * then unknown, and using them again would only add consequences of the first failure.
   */
  const idleSession = () => {
    const session = pick(sessions.filter((s) => !s.busy))
    if (session) session.busy = true
    return session
  }

  const pages = [
    () => send({ route: 'GET /items?offset', expected: 200, path: `/api/v1/items?offset=${Math.floor(Math.random() * seeded.items)}&limit=20` }),
    () => send({ route: 'GET /items?after_id', expected: 200, path: `/api/v1/items?after_id=${Math.floor(Math.random() * lastItemId)}&limit=20` }),
    () => send({ route: 'GET /records/?offset', expected: 200, path: `/api/v1/records/?offset=${Math.floor(Math.random() * seeded.records)}&limit=20` })
  ]

  return [
    {
      name: 'login (logout, then log in again)',
      perSecond: RATES.login,
      async run () {
        const session = idleSession()
        if (!session) return
        await send({ route: 'POST /auth/logout', expected: 204, path: '/api/v1/auth/logout', json: { refresh_token: session.refresh } })
        const pair = await send({ route: 'POST /auth/login', expected: 200, path: '/api/v1/auth/login', form: loginForm(session.email) })
        Object.assign(session, { access: pair.access_token, refresh: pair.refresh_token, busy: false })
      }
    },
    {
      name: 'refresh (every 4th also replays the rotated token)',
      perSecond: RATES.refresh,
      async run () {
        const session = idleSession()
        if (!session) return
        const old = session.refresh
        const pair = await send({ route: 'POST /auth/refresh', expected: 200, path: '/api/v1/auth/refresh', json: { refresh_token: old } })
        if (Math.random() < 0.25) {
          await send({ route: 'POST /auth/refresh (replay)', expected: 401, path: '/api/v1/auth/refresh', json: { refresh_token: old } })
        }
        Object.assign(session, { access: pair.access_token, refresh: pair.refresh_token, busy: false })
      }
    },
    {
      name: 'GET /users/me',
      perSecond: RATES.me,
      // An access token dies with its session: an idle one, kept busy until the answer, so no logout ends it mid-request.
      run: async () => {
        const session = idleSession()
        if (!session) return
        await send({ route: 'GET /users/me', expected: 200, path: '/api/v1/users/me', token: session.access })
        session.busy = false
      }
    },
    {
      name: 'item: create, get, patch, delete, get',
      perSecond: RATES.item,
      async run () {
        const { id } = await send({ route: 'POST /items', expected: 201, path: '/api/v1/items', json: { name: 'soak', price: 1 } })
        lastItemId = Math.max(lastItemId, id)
        const path = `/api/v1/items/${id}`
        await send({ route: 'GET /items/:id', expected: 200, path })
        await send({ route: 'PATCH /items/:id', expected: 200, path, method: 'PATCH', json: { price: 2, in_stock: false } })
        await send({ route: 'DELETE /items/:id', expected: 204, path, method: 'DELETE' })
        await send({ route: 'GET /items/:id (deleted)', expected: 404, path })
      }
    },
    {
      name: 'record: create, get, put, delete, get',
      perSecond: RATES.record,
      async run () {
        const { id } = await send({ route: 'POST /records/', expected: 201, path: '/api/v1/records/', json: { title: 'soak' } })
        const path = `/api/v1/records/${id}`
        await send({ route: 'GET /records/:id', expected: 200, path })
        await send({ route: 'PUT /records/:id', expected: 200, path, method: 'PUT', json: { description: 'soaked' } })
        await send({ route: 'DELETE /records/:id', expected: 204, path, method: 'DELETE' })
        await send({ route: 'GET /records/:id (deleted)', expected: 404, path })
      }
    },
    {
      name: 'list pages',
      perSecond: RATES.pages,
      run: async () => { await (pages[pageTurn++ % pages.length] as () => Promise<unknown>)() }
    }
  ]
}
