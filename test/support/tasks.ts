import { Type } from '@sinclair/typebox'
import type { App } from '../../app.js'

/** A schema resource with one field of each kind: the reference "tasks" of the docs. */
export const TaskFields = Type.Object({
  title: Type.String({ minLength: 1, maxLength: 200 }),
  status: Type.Union([Type.Literal('open'), Type.Literal('doing'), Type.Literal('done')], { default: 'open' }),
  priority: Type.Integer({ minimum: 1, maximum: 5, default: 3 }),
  estimate: Type.Optional(Type.Union([Type.Number({ minimum: 0 }), Type.Null()])),
  due: Type.Optional(Type.String({ format: 'date' })),
  remind_at: Type.Optional(Type.Union([Type.String({ format: 'date-time' }), Type.Null()])),
  done: Type.Boolean({ default: false }),
  tags: Type.Array(Type.String({ maxLength: 30 }), { default: [], maxItems: 10 }),
  meta: Type.Optional(Type.Object({ source: Type.String() }))
})

export type TaskBody = Record<string, unknown> & { id: number, title: string, created_at: string, updated_at: string }

/** POSTs a task and returns the created row; throws unless the answer is 201. */
export async function createTask (app: App, payload: Record<string, unknown>, headers: Record<string, string> = {}, url = '/api/v1/tasks/'): Promise<TaskBody> {
  const res = await app.inject({ method: 'POST', url, headers, payload })
  if (res.statusCode !== 201) throw new Error(`POST ${url} ${JSON.stringify(payload).slice(0, 60)}: ${res.statusCode} ${res.payload}`)
  return res.json()
}
