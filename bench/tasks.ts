import { Type } from '@sinclair/typebox'

/**
 * The reference "tasks" of docs/plugins.md without `meta`: eight fields covering text, enum,
 * integer, nullable number, date, nullable timestamp, boolean and text[] columns. The tests add `meta`.
 */
export const TaskFields = Type.Object({
  title: Type.String({ minLength: 1, maxLength: 200 }),
  status: Type.Union([Type.Literal('open'), Type.Literal('doing'), Type.Literal('done')], { default: 'open' }),
  priority: Type.Integer({ minimum: 1, maximum: 5, default: 3 }),
  estimate: Type.Optional(Type.Union([Type.Number({ minimum: 0 }), Type.Null()])),
  due: Type.Optional(Type.String({ format: 'date' })),
  remind_at: Type.Optional(Type.Union([Type.String({ format: 'date-time' }), Type.Null()])),
  done: Type.Boolean({ default: false }),
  tags: Type.Array(Type.String({ maxLength: 30 }), { default: [], maxItems: 10 })
})

export const TASKS_TABLE = 'tasks'
// The sort of the list scenarios: `?sort=-priority`.
export const TASK_INDEXES = ['priority']
