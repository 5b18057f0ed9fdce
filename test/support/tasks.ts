import { Type } from '@sinclair/typebox'
import type { App } from '../../app.js'
import { TaskFields as BenchTaskFields } from '../../bench/tasks.js'

/** A resource with one field of each kind: the reference "tasks" of the docs, the bench's plus an object. */
export const TaskFields = Type.Object({
  ...BenchTaskFields.properties,
  meta: Type.Optional(Type.Object({ source: Type.String() }))
})

export type TaskBody = Record<string, unknown> & { id: number, title: string, created_at: string, updated_at: string }

/** POSTs a task and returns the created row; throws unless the answer is 201. */
export async function createTask (app: App, payload: Record<string, unknown>, headers: Record<string, string> = {}, url = '/api/v1/tasks/'): Promise<TaskBody> {
  const res = await app.inject({ method: 'POST', url, headers, payload })
  if (res.statusCode !== 201) throw new Error(`POST ${url} ${JSON.stringify(payload).slice(0, 60)}: ${res.statusCode} ${res.payload}`)
  return res.json()
}
