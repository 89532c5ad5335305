"""Dynamic batching: concurrent requests gathered into batches of like length.

    batcher = DynamicBatcher(model.transcribe, max_batch=8, max_wait_seconds=0.01)
    await batcher.start()
    transcript = await batcher.submit(waveform, len(waveform), key=phrases)

The first request waits at most `max_wait_seconds` for others; the gathered
requests are split by key (only requests with equal keys share a batch: a
request's hotwords bias its whole batch), sorted by length and cut into
groups whose longest is at most `max_length_ratio` times their shortest
(padding to the longest is wasted work), and each group runs as one batch
in one worker thread, so the model runs one batch at a time (TensorFlow
uses every core for it) while the event loop keeps reading requests. A
request whose client left is skipped.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor


@dataclasses.dataclass
class _Pending:
    item: object
    length: int
    future: asyncio.Future
    key: Hashable = None


def length_groups(
    lengths: Sequence[int], max_batch: int, max_length_ratio: float
) -> list[list[int]]:
    """Indices of `lengths` cut into batches, sorted by length.

    At most `max_batch` each, the longest at most `max_length_ratio` x the
    shortest.

    Example:
    >>> length_groups([100, 900, 120, 1000, 110], max_batch=2, max_length_ratio=2.0)
    [[0, 4], [2], [1, 3]]
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    groups: list[list[int]] = []
    for index in order:
        group = groups[-1] if groups else None
        if (
            group is None
            or len(group) >= max_batch
            or lengths[index] > max_length_ratio * max(lengths[group[0]], 1)
        ):
            groups.append([index])
        else:
            group.append(index)
    return groups


class DynamicBatcher:
    """Runs `run_batch(items, key) -> results` on batches of submitted items.

    Args:
        run_batch: called in a worker thread with a list of items and the key
            they were submitted with (all the same); returns one result per
            item, in order.
        max_batch: the most items in one batch.
        max_wait_seconds: how long the first item of a batch waits for more.
        max_length_ratio: the longest item of a batch over its shortest.
    """

    def __init__(
        self,
        run_batch: Callable[[list], list],
        max_batch: int = 8,
        max_wait_seconds: float = 0.01,
        max_length_ratio: float = 2.0,
    ):
        self._run_batch = run_batch
        self.max_batch = max_batch
        self.max_wait_seconds = max_wait_seconds
        self.max_length_ratio = max_length_ratio
        self._queue: asyncio.Queue | None = None
        self._task: asyncio.Task | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="t2t-lite-batch")
        self.batch_sizes: list[int] = []  # every batch run, for metrics and tests

    async def start(self) -> None:
        self._queue = asyncio.Queue()
        self._task = asyncio.get_running_loop().create_task(self._serve())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self._executor.shutdown(wait=True)

    async def submit(self, item, length: int, key: Hashable = None):
        """The result of `item` (of `length`), once its batch has run.

        Only items submitted with equal `key`s share a batch.

        Raises:
            Whatever `run_batch` raised for its batch.
        """
        future = asyncio.get_running_loop().create_future()
        await self._queue.put(_Pending(item, length, future, key))
        return await future

    async def _gather(self) -> list[_Pending]:
        pending = [await self._queue.get()]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.max_wait_seconds
        while len(pending) < self.max_batch:
            if not self._queue.empty():  # already waiting: taken even past the deadline
                pending.append(self._queue.get_nowait())
                continue
            left = deadline - loop.time()
            if left <= 0:
                break
            try:
                pending.append(await asyncio.wait_for(self._queue.get(), left))
            except asyncio.TimeoutError:
                break
        return [p for p in pending if not p.future.done()]  # a cancelled client's left

    async def _serve(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            gathered = await self._gather()
            for key in dict.fromkeys(p.key for p in gathered):  # in order of arrival
                await self._run_groups(loop, key, [p for p in gathered if p.key == key])

    async def _run_groups(self, loop, key, pending: list[_Pending]) -> None:
        """Runs `pending` (all of `key`) in batches of like length."""
        lengths = [p.length for p in pending]
        for group in length_groups(lengths, self.max_batch, self.max_length_ratio):
            batch = [pending[i] for i in group]
            self.batch_sizes.append(len(batch))
            try:
                results = await loop.run_in_executor(
                    self._executor, self._run_batch, [p.item for p in batch], key
                )
            except Exception as error:  # noqa: BLE001 - handed to each waiting request
                for p in batch:
                    if not p.future.done():
                        p.future.set_exception(error)
                continue
            for p, result in zip(batch, results, strict=True):
                if not p.future.done():
                    p.future.set_result(result)
