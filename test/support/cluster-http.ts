import { Agent, request } from 'node:http'
import { parseJson, requestParts, type HttpAnswer, type HttpRequestOptions } from './http.js'

export type ClusterRequest = HttpRequestOptions

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

function sendRequest (agent: Agent, localAddress: string, base: string, path: string, options: ClusterRequest): Promise<HttpAnswer> {
  const { method, headers, body } = requestParts(options)
  const timeoutMs = options.timeoutMs ?? 30_000
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, base), { method, headers, agent, localAddress, timeout: timeoutMs }, (res) => {
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
