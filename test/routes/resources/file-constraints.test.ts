import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import t from 'tap'
import { rowsOf } from '../../../db/raw-rows.js'
import { build } from '../../support/app.js'
import { assertProblem, validationProblem } from '../../support/responses.js'

// The change feed is another part's: this file is about the tables.
const NO_EVENTS = { events: false }

/** Projects and their tasks, in plain JSON: a reference, unique keys and search, as RESOURCES_FILE writes them. */
const FILE = {
  projects: {
    fields: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
    unique: ['name'],
    routes: NO_EVENTS
  },
  tasks: {
    fields: {
      type: 'object',
      required: ['title', 'project_id'],
      properties: {
        title: { type: 'string' },
        body: { type: 'string' },
        project_id: { type: 'integer', 'x-references': 'projects', 'x-on-delete': 'restrict' }
      }
    },
    unique: [['project_id', 'title']],
    search: ['title', 'body'],
    routes: NO_EVENTS
  }
}

t.test('RESOURCES_FILE with x-references, unique and search boots and enforces them', async (t) => {
  const dir = await mkdtemp('/tmp/plinth-resources-')
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const path = join(dir, 'resources.json')
  await writeFile(path, JSON.stringify(FILE))
  const app = await build(t, { RESOURCES_FILE: path })
  const post = (name: string, payload: object) => app.inject({ method: 'POST', url: `/api/v1/${name}/`, payload })

  const project = await post('projects', { name: 'Apollo' })
  t.equal(project.statusCode, 201)
  const id = project.json().id as number
  assertProblem(t, await post('projects', { name: 'Apollo' }), 409, 'RESOURCE_CONFLICT')
  t.equal((await post('tasks', { title: 'launch', body: 'count down', project_id: id })).statusCode, 201)
  const twice = await post('tasks', { title: 'launch', project_id: id })
  assertProblem(t, twice, 409, 'RESOURCE_CONFLICT')
  t.equal(twice.json().detail, 'Another row of tasks already has this project_id and title')
  const orphan = await post('tasks', { title: 'drift', project_id: id + 1000 })
  t.same(orphan.json(), validationProblem(['/body/project_id', 'must match a row of projects (foreign key constraint "tasks_project_id_fkey")']))
  const refused = await app.inject({ method: 'DELETE', url: `/api/v1/projects/${id}` })
  assertProblem(t, refused, 409, 'RESOURCE_REFERENCED')
  t.equal(refused.json().detail, `projects ${id} is still referenced by rows of tasks (project_id): delete those rows, or point them elsewhere, first`)

  const indexes = rowsOf<{ name: string }>(await app.plinthDb.db.execute(sql`select indexname as name from pg_indexes where tablename = 'tasks' order by 1`))
  t.same(indexes.map((row) => row.name), ['tasks_pkey', 'tasks_project_id_idx', 'tasks_project_id_title_key', 'tasks_search_idx'])
})
