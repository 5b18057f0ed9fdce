import { get } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import { PASSWORD } from '../helper.js'

export interface Answer {
  status: number
  headers: Headers
  body: Record<string, unknown>
}

/** A POST with a JSON or form body, else a GET, by fetch; the answer's JSON read. */
export async function send (base: string, path: string, { json, form, token }: {
  json?: unknown
  form?: Record<string, string>
  token?: string
} = {}): Promise<Answer> {
  const headers: Record<string, string> = {}
  if (token) headers.authorization = `Bearer ${token}`
  if (json !== undefined) headers['content-type'] = 'application/json'
  if (form) headers['content-type'] = 'application/x-www-form-urlencoded'
  const res = await fetch(base + path, {
    method: json === undefined && form === undefined ? 'GET' : 'POST',
    headers,
    body: form ? new URLSearchParams(form).toString() : json === undefined ? undefined : JSON.stringify(json)
  })
  const text = await res.text()
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : {} }
}

export const loginAt = (base: string, email: string, password = PASSWORD) =>
  send(base, '/api/v1/auth/login', { form: { grant_type: 'password', username: email, password } })

export const refreshAt = (base: string, refreshToken: string) =>
  send(base, '/api/v1/auth/refresh', { json: { refresh_token: refreshToken } })

export const meAt = async (base: string, token: string) => (await send(base, '/api/v1/users/me', { token })).status

/**
 * A GET on a connection of its own: node:cluster hands out connections, not requests, so fetch's
 * kept-alive connection would always reach the same worker (and break once that worker is killed).
 */
export function getOnNewConnection (url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    get(url, { agent: false }, (res) => {
      res.resume()
      res.once('end', () => resolve(res.statusCode ?? 0))
    }).once('error', reject)
  })
}

/**
 * Polls `find` until it returns something other than undefined; throws `what` after `ms`. The
 * default allows for a server process's start: 15 to 60 s here, TypeScript compiled on 2 busy cores.
 */
export async function until<T> (what: string, find: () => T | undefined, ms = 120_000): Promise<T> {
  for (const deadline = Date.now() + ms; Date.now() < deadline; await sleep(50)) {
    const found = find()
    if (found !== undefined) return found
  }
  throw new Error(`gave up after ${ms} ms waiting for ${what}`)
}

export function isAlive (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
