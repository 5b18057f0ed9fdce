import { Type } from '@sinclair/typebox'
import Fastify from 'fastify'
import { describe, expect, test } from 'tstyche'
import {
  conflictError, defineResource, forbiddenError, notFoundError, problemError, resourceHooks, resourcePlugin, validationError,
  type CreateContext, type PlinthAccount, type ResourceHooks, type ResourceOptions, type ResourceRow
} from 'plinth'
import type { Database } from 'plinth/db'

const Task = Type.Object({
  title: Type.String(),
  status: Type.Union([Type.Literal('open'), Type.Literal('done')]),
  done_at: Type.Optional(Type.String({ format: 'date-time' }))
})
type TaskRow = ResourceRow<typeof Task>

const app = Fastify()

describe('resourceHooks', () => {
  test('infers the rows from the fields', () => {
    resourceHooks(Task, {
      beforeCreate (data, context) {
        expect(data).type.toBe<Partial<TaskRow>>()
        expect(context).type.toBe<CreateContext>()
        expect(context.tx).type.toBe<Database>()
        expect(context.account).type.toBe<PlinthAccount | null>()
        expect(context.index).type.toBe<number>()
      },
      beforeUpdate (data, { current }) {
        expect(current.status).type.toBe<'open' | 'done'>()
        return data.status === 'done' && current.status !== 'done' ? { ...data, done_at: new Date().toISOString() } : data
      },
      afterUpdate (row, { previous }) {
        expect(row).type.toBe<TaskRow>()
        expect(previous).type.toBe<TaskRow>()
      },
      beforeDelete (current) {
        expect(current.title).type.toBe<string>()
        if (current.status === 'open') throw validationError({ '/params/tasks_id': 'is still open' })
      }
    })
  })

  test('a hook returns the values to write, of the row\'s types, or nothing', () => {
    expect(resourceHooks).type.toBeCallableWith(Task, { beforeCreate: async () => ({ title: 'x' }) })
    expect(resourceHooks).type.toBeCallableWith(Task, { beforeCreate: () => undefined })
    expect(resourceHooks).type.not.toBeCallableWith(Task, { beforeCreate: () => ({ title: 7 }) })
    expect(resourceHooks).type.not.toBeCallableWith(Task, { beforeCreate: () => ({ status: 'closed' }) })
  })

  test('a hook throws with the problem helpers its documentation names', () => {
    expect(resourceHooks).type.toBeCallableWith(Task, {
      beforeCreate () { throw problemError(409, 'TASKS_REFUSED', 'refused') },
      beforeUpdate () { throw conflictError('TASKS_TAKEN', 'taken') },
      beforeDelete (current: TaskRow) { throw current.status === 'open' ? forbiddenError('TASKS_OPEN', 'still open') : notFoundError('TASKS_GONE', 'gone') }
    })
  })

  test('names only the six hooks', () => {
    expect(resourceHooks).type.not.toBeCallableWith(Task, { beforeSave: () => undefined })
  })

  test('typed hooks are still hooks of resourcePlugin\'s options', () => {
    const hooks = resourceHooks(Task, { afterCreate (row) { expect(row.title).type.toBe<string>() } })
    expect(hooks).type.toBeAssignableTo<ResourceHooks>()
    expect(app.register).type.toBeCallableWith(resourcePlugin, { name: 'tasks', fields: Task, hooks })
  })
})

describe('defineResource', () => {
  test('types the hooks by the fields given beside them', () => {
    const options = defineResource({
      prefix: '/api/v1',
      name: 'tasks',
      fields: Task,
      owner: true,
      hooks: {
        beforeCreate (data) {
          expect(data.title).type.toBe<string | undefined>()
          return { ...data, title: data.title?.trim() }
        }
      }
    })
    expect(options).type.toBeAssignableTo<ResourceOptions>()
    expect(app.register).type.toBeCallableWith(resourcePlugin, options)
  })

  test('a hook that misreads a field is a compile error', () => {
    // @ts-expect-error Property 'done' does not exist
    defineResource({ name: 'tasks', fields: Task, hooks: { afterCreate: (row) => row.done } })
    expect(defineResource).type.not.toBeCallableWith({ name: 'tasks', fields: Task, hooks: { beforeCreate: () => ({ title: 1 }) } })
  })
})
