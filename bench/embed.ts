/**
 * `?embed=` against the N+1 way, in process (app.inject, no network), on PGlite or on PostgreSQL:
 *
 *   npx tsx bench/embed.ts                      # in-memory PGlite
 *   npx tsx bench/embed.ts postgres://...       # or TEST_DATABASE_URL: a database made for the run, then dropped
 *
 * Each scenario runs for BENCH_SECONDS (default 3) and prints milliseconds per page and rows per second.
 */
import { randomBytes } from 'node:crypto'
import { Type } from '@sinclair/typebox'
import { eq, sql } from 'drizzle-orm'
import postgres from 'postgres'
import { API_PREFIX, buildApp, type App } from '../app.js'
import { resourceJson } from '../db/resource-json.js'
import { buildResourceTable } from '../db/resource-table.js'
import resourcePlugin from '../routes/resources/index.js'
import { Reference, readFields } from '../schemas/fields.js'

const PROJECTS = 100
const TASKS_PER_PROJECT = 10
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3)

const ProjectFields = Type.Object({ name: Type.String(), budget: Type.Integer({ default: 0 }) })
const TaskFields = Type.Object({
  title: Type.String(),
  status: Type.Union([Type.Literal('open'), Type.Literal('done')], { default: 'open' }),
  priority: Type.Integer({ default: 3 }),
  project_id: Reference('projects', { onDelete: 'cascade' })
})

/** A database of its own on the server at `url`, dropped by the returned function. */
async function scratchDatabase (url: string): Promise<{ url: string, drop: () => Promise<void> }> {
  const name = `plinth_bench_embed_${randomBytes(4).toString('hex')}`
  const admin = postgres(url, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database ${name}`)
  const scratch = new URL(url)
  scratch.pathname = `/${name}`
  return {
    url: scratch.toString(),
    drop: async () => {
      await admin.unsafe(`drop database if exists ${name} with (force)`)
      await admin.end()
    }
  }
}

async function seed (app: App) {
  await app.plinthDb.db.execute(sql`insert into projects (name, budget) select 'project ' || g, g * 100 from generate_series(1, ${PROJECTS}::int) g`)
  await app.plinthDb.db.execute(sql`
    insert into tasks (title, status, priority, project_id)
    select 'task ' || g, (array['open', 'done'])[1 + g % 2], 1 + g % 5, 1 + (g - 1) % ${PROJECTS}::int
    from generate_series(1, ${PROJECTS * TASKS_PER_PROJECT}::int) g`)
  await app.plinthDb.db.execute(sql`analyze`)
}

async function page (app: App, url: string): Promise<Array<Record<string, unknown>>> {
  const res = await app.inject({ method: 'GET', url: `${API_PREFIX}${url}` })
  if (res.statusCode !== 200) throw new Error(`GET ${url}: ${res.statusCode} ${res.payload.slice(0, 200)}`)
  return res.json()
}

/** Runs `once` (one page of `rows` rows) for SECONDS and prints its mean time per page. */
async function measure (label: string, rows: number, once: () => Promise<unknown>) {
  for (let i = 0; i < 3; i++) await once()
  const until = performance.now() + SECONDS * 1000
  let pages = 0
  const start = performance.now()
  while (performance.now() < until) {
    await once()
    pages++
  }
  const ms = (performance.now() - start) / pages
  console.log(`${label.padEnd(62)} ${ms.toFixed(2).padStart(8)} ms/page ${Math.round(rows * 1000 / ms).toString().padStart(8)} rows/s  (${pages} pages)`)
  return ms
}

async function main () {
  const given = process.argv[2] ?? process.env.TEST_DATABASE_URL
  const scratch = given ? await scratchDatabase(given) : undefined
  const app = await buildApp({ DATABASE_URL: scratch?.url ?? 'memory://', LOG_LEVEL: 'silent', OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: 0 }, { logger: false })
  try {
    await app.register(resourcePlugin, { prefix: API_PREFIX, name: 'projects', fields: ProjectFields, maxLimit: 100 })
    await app.register(resourcePlugin, { prefix: API_PREFIX, name: 'tasks', fields: TaskFields, maxLimit: 100 })
    await app.ready()
    await seed(app)
    const db = app.plinthDb.db
    const projects = buildResourceTable('projects', readFields(ProjectFields))
    const tasks = buildResourceTable('tasks', readFields(TaskFields))
    const projectById = db.select({ json: resourceJson(readFields(ProjectFields)) }).from(projects)
      .where(eq(projects.id, sql.placeholder('id'))).prepare('bench_embed_project')
    const tasksOf = db.select({ json: resourceJson(readFields(TaskFields)) }).from(tasks)
      .where(eq(tasks.project_id!, sql.placeholder('id'))).orderBy(tasks.id).limit(10).prepare('bench_embed_tasks')

    // The same answer three ways, checked once before timing them.
    const embedded = await page(app, '/tasks/?limit=100&embed=project')
    const byHand = []
    for (const task of await page(app, '/tasks/?limit=100')) byHand.push({ ...task, project: await page(app, `/projects/${task.project_id as number}`) })
    if (JSON.stringify(embedded) !== JSON.stringify(byHand)) throw new Error('embed=project and the N+1 answers differ')

    console.log(`${scratch ? 'PostgreSQL' : 'PGlite'}: ${PROJECTS} projects, ${PROJECTS * TASKS_PER_PROJECT} tasks; app.inject, in process, ${SECONDS} s per scenario`)
    console.log('100 tasks, each with its project')
    await measure('  GET /tasks?limit=100 (no embed, for reference)', 100, () => page(app, '/tasks/?limit=100'))
    const one = await measure('  GET /tasks?limit=100&embed=project (one statement)', 100, () => page(app, '/tasks/?limit=100&embed=project'))
    const http = await measure('  GET /tasks?limit=100, then GET /projects/:id per row', 100, async () => {
      for (const task of await page(app, '/tasks/?limit=100')) await page(app, `/projects/${task.project_id as number}`)
    })
    const sqlOnly = await measure('  GET /tasks?limit=100, then one query per row', 100, async () => {
      for (const task of await page(app, '/tasks/?limit=100')) await projectById.execute({ id: task.project_id })
    })
    console.log(`  the N+1 GETs take ${(http / one).toFixed(1)}x as long as the embed, the N+1 queries ${(sqlOnly / one).toFixed(1)}x`)

    console.log('20 projects, each with its first 10 tasks')
    await measure('  GET /projects?limit=20 (no embed, for reference)', 20, () => page(app, '/projects/?limit=20'))
    const many = await measure('  GET /projects?limit=20&embed=tasks&tasks.limit=10', 20 * 11, () => page(app, '/projects/?limit=20&embed=tasks&tasks.limit=10'))
    const manyHttp = await measure('  GET /projects?limit=20, then GET /tasks?project_id= per row', 20 * 11, async () => {
      for (const project of await page(app, '/projects/?limit=20')) await page(app, `/tasks/?project_id=${project.id as number}&limit=10`)
    })
    const manySql = await measure('  GET /projects?limit=20, then one query per row', 20 * 11, async () => {
      for (const project of await page(app, '/projects/?limit=20')) await tasksOf.execute({ id: project.id })
    })
    console.log(`  the N+1 GETs take ${(manyHttp / many).toFixed(1)}x as long as the embed, the N+1 queries ${(manySql / many).toFixed(1)}x`)
  } finally {
    await app.close()
    await scratch?.drop()
  }
}

await main()
