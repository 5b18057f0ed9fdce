import { Type } from '@sinclair/typebox'
import Fastify from 'fastify'
import { describe, expect, test } from 'tstyche'
import { resourcePlugin, resourceTable, type ResourceRow, type ResourceTable } from 'plinth'

const Task = Type.Object({
  title: Type.String({ minLength: 1 }),
  done: Type.Boolean({ default: false }),
  due: Type.Optional(Type.String({ format: 'date' })),
  estimate: Type.Union([Type.Number(), Type.Null()])
})

const app = Fastify()

test('one TypeBox object defines the resource\'s routes, its rows and its table', () => {
  expect(app.register).type.toBeCallableWith(resourcePlugin, { prefix: '/api/v1', name: 'tasks', fields: Task, owner: true })
})

describe('ResourceRow', () => {
  test('is a row of the fields, with the server\'s columns', () => {
    expect<ResourceRow<typeof Task>>().type.toBe<{
      id: number
      created_at: string
      updated_at: string
      owner_id?: number
    } & {
      title: string
      done: boolean
      due?: string
      estimate: number | null
    }>()
  })

  test('takes a TypeBox object only', () => {
    expect<ResourceRow<typeof Task>['estimate']>().type.toBe<number | null>()
    // @ts-expect-error does not satisfy the constraint 'TObject<TProperties>'
    expect<ResourceRow<{ title: string }>>().type.toBeAssignableTo<object>()
  })
})

describe('resourceTable', () => {
  test('the fields\' TypeBox type names the columns', () => {
    const tasks = resourceTable<typeof Task>(app, 'tasks')
    expect(tasks).type.toBe<ResourceTable<'id' | 'created_at' | 'updated_at' | 'owner_id' | 'title' | 'done' | 'due' | 'estimate'>>()
    expect(tasks).type.toHaveProperty('title')
    expect(tasks).type.toHaveProperty('owner_id')
    expect(tasks).type.not.toHaveProperty('nope')
  })

  test('so do the fields\' names', () => {
    const tasks = resourceTable<'title' | 'done'>(app, 'tasks')
    expect(tasks).type.toHaveProperty('done')
    expect(tasks).type.not.toHaveProperty('due')
  })

  test('without a type argument, any column name is allowed', () => {
    expect(resourceTable(app, 'notes')).type.toBe<ResourceTable>()
    expect(resourceTable(app, 'notes')).type.toHaveProperty('anything')
  })

  test('host code queries the rows with Drizzle, through app.plinthDb', () => {
    const tasks = resourceTable<typeof Task>(app, 'tasks')
    expect(app.plinthDb.db.select({ id: tasks.id, title: tasks.title }).from(tasks)).type.not.toRaiseError()
    expect(resourceTable).type.not.toBeCallableWith('tasks')
  })
})
