import { sql } from 'drizzle-orm'
import type { Database } from '../db/client.js'
import { prepareResourceTable } from '../db/resources.js'
import { readFields } from '../schemas/fields.js'
import { TASK_INDEXES, TASKS_TABLE, TaskFields } from './tasks.js'
import { resize, seedCommand, type SeededTable } from './resize.js'

/**
 * Appends `count` generated tasks in one INSERT ... SELECT, then VACUUM ANALYZE for the planner's
 * statistics. Status cycles open/doing/done and priority 1..5 independently of it, so every
 * priority holds open tasks all along the id range. Not inside a transaction (VACUUM cannot be).
 */
export async function seedTasks (db: Database, count: number): Promise<void> {
  if (!Number.isInteger(count) || count < 0) throw new RangeError(`count must be a non-negative integer (got ${count})`)
  if (count === 0) return
  await db.execute(sql`
    insert into tasks (title, status, priority, estimate, due, remind_at, done, tags)
    select 'seeded task number ' || g,
           (array['open', 'doing', 'done'])[1 + g % 3],
           1 + (g / 3) % 5,
           case when g % 4 = 0 then null else (g % 40) / 2.0 end,
           date '2025-01-01' + g % 365,
           case when g % 5 = 0 then null else timestamptz '2025-01-01 09:00:00+00' + (g % 8760) * interval '1 hour' end,
           g % 3 = 2,
           case g % 4 when 0 then '{}'::text[] when 1 then array['home'] when 2 then array['work', 'urgent']
             else array['errand', 'later', 'team ' || g % 10] end
    from generate_series(1, ${count}::int) as g`)
  await db.execute(sql`vacuum analyze tasks`)
}

/** Creates the tasks table as the app's resource plugin does (a no-op once it exists with these fields). */
export async function ensureTasksTable (db: Database): Promise<void> {
  await prepareResourceTable(db, { table: TASKS_TABLE, fields: readFields(TaskFields), indexes: TASK_INDEXES })
}

const tasksTable: SeededTable = { name: 'tasks', prepare: ensureTasksTable, seed: seedTasks }

/** Makes the tasks table at `url` hold exactly `count` rows. */
export const resizeTasks = (url: string, count: number) => resize(url, count, tasksTable)

seedCommand(import.meta.url, tasksTable)
