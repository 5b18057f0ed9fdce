import { Agent, request } from 'node:http'
import type { HttpAnswer } from './http.js'

export interface ClusterRequest {
  method?: string
  json?: unknown
  form?: Record<string, string>
  token?: string
  headers?: Record<string, string>
  timeoutMs?: number
}

/**
 * An HTTP client from one loopback address (any of 127.0.0.0/8 on Linux): behind nginx, with
 * TRUST_PROXY=127.0.0.1, that address is the client's for plinth's rate limits and login
 * throttling, so each test can be a client of its own. Its kept-alive connections are its own.
 */
export function clusterClient (base: string, from = '127.0.0.1', sockets = 16) {
  const agent = new Agent({ keepAlive: true, maxSockets: sockets })
  const send = (path: string, options: ClusterRequest = {}) => sendRequest(agent, from, base, path, options)
  return { base, from, send, close: () => agent.destroy() }
}

export type ClusterClient = ReturnType<typeof clusterClient>

function sendRequest (agent: Agent, localAddress: string, base: string, path: string, { method, json, form, token, headers: extra, timeoutMs = 30_000 }: ClusterRequest): Promise<HttpAnswer> {
  const headers: Record<string, string> = { ...extra }
  let body: string | undefined
  if (token) headers.authorization = `Bearer ${token}`
  if (json !== undefined) {
    headers['content-type'] = 'application/json'
    body = JSON.stringify(json)
  }
  if (form) {
    headers['content-type'] = 'application/x-www-form-urlencoded'
    body = new URLSearchParams(form).toString()
  }
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, base), { method: method ?? (body === undefined ? 'GET' : 'POST'), headers, agent, localAddress, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.once('error', reject)
      res.once('end', () => {
        const text = Buffer.concat(chunks).toString('utf8')
        const answerHeaders = new Headers()
        for (const [name, value] of Object.entries(res.headers)) {
          for (const one of Array.isArray(value) ? value : [value ?? '']) answerHeaders.append(name, one)
        }
        resolve({ status: res.statusCode ?? 0, headers: answerHeaders, text, json: parseJson(text) })
      })
    })
    req.once('timeout', () => req.destroy(new Error(`no answer to ${path} within ${timeoutMs} ms`)))
    req.once('error', reject)
    req.end(body)
  })
}

function parseJson (text: string): any {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}
