import { setTimeout as sleep } from 'node:timers/promises'
import type { Test } from 'tap'
import type { ClusterClient } from './cluster-http.js'
import type { HttpAnswer } from './http.js'
import { until } from './until.js'

export interface LoadAnswer {
  loop: number
  method: string
  path: string
  status: number
  /** The instances nginx tried, in order (X-Upstream), or [] when there was no answer. */
  upstreams: string[]
  /** The created row's id, for a 201. */
  id?: number
  /** The transport error when there was no HTTP answer. */
  error?: string
  /** How many answers had been counted when this request was sent. */
  sentAfter: number
}

export type LoadStep = (client: ClusterClient, loop: number, i: number, last: LoadAnswer | undefined) => { method?: string, path: string, json?: unknown }

/**
 * `concurrency` loops, each sending one request after another through `client`, until `stop()`
 * or the end of the test. Every answer is kept, with which instance gave it, so a test can count
 * what clients saw.
 */
export function loadLoops (t: Test, client: ClusterClient, concurrency: number, step: LoadStep) {
  const answers: LoadAnswer[] = []
  const state = { stopping: false }
  const loops = Array.from({ length: concurrency }, async (_, loop) => {
    let last: LoadAnswer | undefined
    for (let i = 0; !state.stopping; i++) {
      const { method = 'GET', path, json } = step(client, loop, i, last)
      const sentAfter = answers.length
      let answer: HttpAnswer | undefined
      let error: string | undefined
      try {
        answer = await client.send(path, { method, json, timeoutMs: 30_000 })
      } catch (err) {
        error = (err as Error).message
        // A refused connection fails at once: no busy loop while nothing listens.
        await sleep(10)
      }
      last = {
        loop,
        method,
        path,
        status: answer?.status ?? 0,
        upstreams: (answer?.headers.get('x-upstream') ?? '').split(', ').filter(Boolean),
        id: answer?.status === 201 ? (answer.json as { id: number }).id : undefined,
        error,
        sentAfter
      }
      answers.push(last)
    }
  })
  const stop = async () => {
    state.stopping = true
    await Promise.all(loops)
    return answers
  }
  t.teardown(stop)
  return {
    answers,
    /** Resolves once `count` answers are in (bounded by `ms`). */
    async reach (count: number, ms = 60_000) {
      await until(`${count} answers`, () => answers.length >= count || undefined, ms)
    },
    stop
  }
}
