import { get } from 'node:http'
import { PASSWORD } from '../support/app.js'
import { httpRequest } from '../support/http.js'

export const loginAt = (base: string, email: string, password = PASSWORD) =>
  httpRequest(base, '/api/v1/auth/login', { form: { grant_type: 'password', username: email, password } })

export const refreshAt = (base: string, refreshToken: string) =>
  httpRequest(base, '/api/v1/auth/refresh', { json: { refresh_token: refreshToken } })

export const meAt = async (base: string, token: string) => (await httpRequest(base, '/api/v1/users/me', { token })).status

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

export function isAlive (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
