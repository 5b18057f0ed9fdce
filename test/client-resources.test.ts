import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { clientTypes } from '../scripts/generate-client.js'
import { build } from './support/app.js'
import { typecheck } from './support/typecheck.js'

/** A user's own resources: a relation, a unique key and search fields, in plain JSON as RESOURCES_FILE takes them. */
const RESOURCES = {
  projects: {
    fields: { type: 'object', required: ['name'], properties: { name: { type: 'string', minLength: 1 } } },
    unique: ['name']
  },
  tasks: {
    fields: {
      type: 'object',
      required: ['title', 'project_id'],
      properties: {
        title: { type: 'string', minLength: 1 },
        body: { type: 'string', default: '' },
        status: { type: 'string', enum: ['open', 'done'], default: 'open' },
        project_id: { type: 'integer', 'x-references': 'projects', 'x-on-delete': 'cascade' }
      }
    },
    search: ['title', 'body']
  }
}

t.test('types generated from the document of a RESOURCES_FILE type its resources, embeds, search and bulk creates', async (t) => {
  const dir = await mkdtemp('/tmp/plinth-client-')
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'resources.json')
  await writeFile(file, JSON.stringify(RESOURCES))
  const app = await build(t, { RESOURCES_FILE: file })
  const document = (await app.inject({ method: 'GET', url: '/docs/json' })).json()

  const errors = await typecheck(t, {
    'api.ts': await clientTypes(document),
    'client.ts': `
      import createClient from 'openapi-fetch'
      import type { components, paths } from './api.js'
      type Task = components['schemas']['TasksRecord']
      const api = createClient<paths>({ baseUrl: 'http://127.0.0.1:8000' })
      export async function tour () {
        const project = await api.POST('/api/v1/projects', { body: { name: 'plinth' } })
        const projectId: number = project.data && !Array.isArray(project.data) ? project.data.id : 0
        await api.POST('/api/v1/tasks', { body: [{ title: 'one', project_id: projectId }, { title: 'two', project_id: projectId }] })
        const found = await api.GET('/api/v1/tasks', { params: { query: { q: 'one', status: 'open', embed: 'project' } } })
        await api.GET('/api/v1/tasks', { params: { query: { 'status[in]': 'open,done', 'project_id[in]': '1,2' } } })
        const first: Task | undefined = found.data?.[0]
        const title: string | undefined = first?.title
        // @ts-expect-error project_id is an integer
        await api.POST('/api/v1/tasks', { body: { title: 'three', project_id: 'plinth' } })
        // @ts-expect-error status is open or done
        await api.GET('/api/v1/tasks', { params: { query: { status: 'later' } } })
        // @ts-expect-error an in filter is one comma-separated value
        await api.GET('/api/v1/tasks', { params: { query: { 'status[in]': ['open', 'done'] } } })
        return title
      }
    `
  })
  t.same(errors, [], 'the client compiles, and the three wrong calls do not')
})
