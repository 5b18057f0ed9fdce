"""The FastAPI peer for `npm run bench:peers`: plinth's two catalog reads and a filtered, sorted
list of tasks, written the way a typical FastAPI app writes them (asyncpg pool, Pydantic
response models, count(*) for the catalog's total), over the same `items` and `tasks` tables. Started by bench/peers/run.ts with uvicorn; it only needs
PEER_DATABASE_URL. Not a product: no writes, no validation beyond the path and query types.
"""

import os
from datetime import date, datetime
from enum import Enum
from typing import List, Optional

import asyncpg
from fastapi import FastAPI, HTTPException, Query
from pydantic import BaseModel

app = FastAPI()

# The same pool size as plinth's postgres.js client (db/client.ts), so neither gets more
# database connections than the other.
POOL_SIZE = 10
COLUMNS = 'id, name, description, price, in_stock, created_at'
TASK_COLUMNS = 'id, created_at, updated_at, title, status, priority, estimate, due, remind_at, done, tags'


class Item(BaseModel):
    id: int
    name: str
    description: Optional[str]
    price: float
    in_stock: bool
    created_at: datetime


class Status(str, Enum):
    open = 'open'
    doing = 'doing'
    done = 'done'


class TaskSort(str, Enum):
    id = 'id'
    priority = 'priority'
    priority_desc = '-priority'


# Whitelisted SQL per sort; ties by id in the sort's direction, as plinth's.
TASK_ORDER = {TaskSort.id: 'id', TaskSort.priority: 'priority, id', TaskSort.priority_desc: 'priority DESC, id DESC'}


class Task(BaseModel):
    id: int
    created_at: datetime
    updated_at: datetime
    title: str
    status: Status
    priority: int
    estimate: Optional[float]
    due: Optional[date]
    remind_at: Optional[datetime]
    done: bool
    tags: List[str]


class Page(BaseModel):
    items: List[Item]
    total: int
    offset: int
    limit: int
    has_next: bool


@app.on_event('startup')
async def open_pool():
    app.state.pool = await asyncpg.create_pool(os.environ['PEER_DATABASE_URL'], min_size=POOL_SIZE, max_size=POOL_SIZE)


@app.on_event('shutdown')
async def close_pool():
    await app.state.pool.close()


@app.get('/items/{item_id}', response_model=Item)
async def get_item(item_id: int):
    row = await app.state.pool.fetchrow(f'SELECT {COLUMNS} FROM items WHERE id = $1', item_id)
    if row is None:
        raise HTTPException(status_code=404, detail=f'item {item_id} not found')
    return dict(row)


@app.get('/items', response_model=Page)
async def list_items(offset: int = Query(0, ge=0), limit: int = Query(20, ge=1, le=100)):
    # Two queries on one connection, as a typical app does; the total is a plain count(*),
    # which reads the whole table (plinth reads a trigger-maintained counter instead).
    async with app.state.pool.acquire() as conn:
        rows = await conn.fetch(f'SELECT {COLUMNS} FROM items ORDER BY id LIMIT $1 OFFSET $2', limit, offset)
        total = await conn.fetchval('SELECT count(*) FROM items')
    return {'items': [dict(row) for row in rows], 'total': total, 'offset': offset, 'limit': limit,
            'has_next': offset + len(rows) < total}


@app.get('/tasks', response_model=List[Task])
async def list_tasks(status: Optional[Status] = None, sort: TaskSort = TaskSort.id,
                     limit: int = Query(20, ge=1, le=100)):
    # One query, no total: plinth's list sends none unless asked (count=exact).
    order = TASK_ORDER[sort]
    if status is None:
        rows = await app.state.pool.fetch(f'SELECT {TASK_COLUMNS} FROM tasks ORDER BY {order} LIMIT $1', limit)
    else:
        rows = await app.state.pool.fetch(
            f'SELECT {TASK_COLUMNS} FROM tasks WHERE status = $1 ORDER BY {order} LIMIT $2', status.value, limit)
    return [dict(row) for row in rows]
