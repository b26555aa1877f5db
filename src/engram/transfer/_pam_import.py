"""``import_pam``: a Portable AI Memory (PAM) 1.0 memory-store document into a seat's ring.

Spec: Portable AI Memory (PAM) Specification v1.0 §6 (content hashes), §15.4 (integrity),
§16.3 (incremental merge: match ``base_export_id``; insert or update by id; retracted memories
are marked, never physically deleted), §18.4-§18.5 (verify a signature when present; never
refuse an unsigned document for being unsigned), §7 (lifecycle). Decisions in docs/spec/pam.md:

- Nothing is imported until the whole document has been checked: schema, instants, ids,
  content hashes, integrity, cross references, and the signature when there is one (a
  signature that does not verify, or that engram cannot verify, refuses the document).
- Every PAM memory becomes (or updates) an engram memory in its ring, content addressed as
  always; its PAM object is kept whole beside it. A memory whose status is ``retracted``,
  ``superseded`` or ``archived`` is kept and withdrawn from recall (``engram.memory.withdraw``);
  a later document that makes it ``active`` (or ``deprecated``) again reinstates it.
- A memory whose content changes becomes a new engram memory (content addressing); the old one
  is withdrawn unless another served PAM memory still holds the same content.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from engram.core.bulk import gc_paused
from engram.core.canonical import Json, JsonObject
from engram.core.clock import format_instant_precise
from engram.core.keys import PublicKey
from engram.errors import ConflictError, Forbidden, SignatureInvalid
from engram.memory import (
    Memory,
    MemoryEngine,
    get_memory,
    import_memories,
    memory_id,
    reinstate,
    withdraw,
)
from engram.memory.internals import erased_among
from engram.transfer import _pam_tables as tables
from engram.transfer import _wire as wire
from engram.transfer._pam_format import (
    SERVED_STATUSES,
    check_contents,
    check_schema,
    normal_memory,
    strip_object,
)
from engram.transfer._pam_map import engram_member, incoming_memory, kind_of, pam_part
from engram.transfer._pam_signature import verify_signature


@dataclass(frozen=True)
class PamImport:
    """What one document did to the store."""

    export_id: str | None
    export_type: str
    owner_id: str
    store_owner_id: str
    signature: str  # "unsigned" | "verified"
    signer: str | None  # Multikey of the key that signed it
    memories: int
    inserted: int
    updated: int
    unchanged: int
    withdrawn: int  # engram memories taken out of recall by this document
    reinstated: int
    relations: int  # relations added or changed
    conversations: int
    ring_id: str
    repeated: bool  # this export id had been imported (or written) here before
    erased: int = 0  # memories erased here before: reported, not brought back

    def to_wire(self) -> JsonObject:
        return {
            "export_id": self.export_id,
            "export_type": self.export_type,
            "owner_id": self.owner_id,
            "store_owner_id": self.store_owner_id,
            "owner_matches": self.owner_id == self.store_owner_id,
            "signature": self.signature,
            "signed_by": self.signer,
            "memories": self.memories,
            "inserted": self.inserted,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "withdrawn": self.withdrawn,
            "reinstated": self.reinstated,
            "relations": self.relations,
            "conversations": self.conversations,
            "ring_id": self.ring_id,
            "repeated": self.repeated,
            "erased_here": self.erased,
        }


@dataclass(frozen=True)
class Document:
    """The members of a schema-checked document that the import reads, narrowed once."""

    whole: JsonObject
    memories: list[JsonObject]
    relations: list[JsonObject]
    conversations: list[JsonObject]
    owner: JsonObject
    export_id: str | None
    export_type: str
    export_date: str | None
    since: str | None
    base_export_id: str | None
    checksum: str | None

    @classmethod
    def of(cls, doc: JsonObject) -> Document:
        return cls(
            whole=doc,
            memories=wire.objects(doc["memories"], "memories"),
            relations=wire.objects(doc.get("relations"), "relations"),
            conversations=wire.objects(doc.get("conversations_index"), "conversations_index"),
            owner=wire.obj(doc["owner"], "owner"),
            export_id=wire.opt_text(doc.get("export_id"), "export_id"),
            export_type=wire.text(doc.get("export_type", "full"), "export_type"),
            export_date=wire.opt_text(doc.get("export_date"), "export_date"),
            since=wire.opt_text(doc.get("since"), "since"),
            base_export_id=wire.opt_text(doc.get("base_export_id"), "base_export_id"),
            checksum=wire.opt_text(wire.block(doc, "integrity").get("checksum"), "checksum"),
        )


def _references(doc: Document) -> set[str]:
    refs: set[str] = set()
    for i, r in enumerate(doc.relations):
        refs.update(wire.text(r[end], f"relations[{i}].{end}") for end in ("from", "to"))
    for i, m in enumerate(doc.memories):
        successor = wire.block(m, "temporal").get("superseded_by")
        if successor is not None:
            refs.add(wire.text(successor, f"memories[{i}].temporal.superseded_by"))
    for i, c in enumerate(doc.conversations):
        refs.update(wire.texts(c.get("derived_memories"), f"conversations_index[{i}]"))
    return refs - {wire.text(m["id"], "memory id") for m in doc.memories}


def known_ids(engine: MemoryEngine, ids: set[str]) -> set[str]:
    """Which of ``ids`` this store already knows, as PAM ids or as engram memory ids."""
    if not ids:
        return set()
    with engine.store.read() as tx:
        known = set(tables.rows_by_id(tx, sorted(ids)))
    return known | {i for i in ids - known if get_memory(engine, i) is not None}


def check_signature(doc: JsonObject, trusted: Collection[PublicKey]) -> tuple[str, str | None]:
    if doc.get("signature") is None:
        if trusted:
            raise SignatureInvalid(
                "the document is unsigned and a trusted key was required; nothing was imported"
            )
        return "unsigned", None
    check = verify_signature(doc)
    if trusted and check.key not in trusted:
        raise SignatureInvalid(
            f"the document is signed by {check.multikey}, which is not a trusted key; "
            "nothing was imported"
        )
    return "verified", check.multikey


def check_base(engine: MemoryEngine, doc: Document, any_base: bool) -> None:
    base = doc.base_export_id
    if doc.export_type != "incremental" or base is None or any_base:
        return
    with engine.store.read() as tx:
        known = tables.logged_export(tx, base)
    if known is None:
        raise ConflictError(
            f"base_export_id {base!r} is no export this store has imported or written "
            "(PAM §16.3); import the base first, or pass --any-base to merge anyway"
        )


@dataclass
class Plan:
    rows: list[tables.PamRow]
    records: list[JsonObject]
    touched: set[str]  # engram memories whose serving may change
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    erased: int = 0
    memories: int | None = None  # when the plan covers a document read a batch at a time


def _record_id(record: JsonObject) -> str:
    memory = record.get("memory")
    return str(memory.get("id")) if isinstance(memory, dict) else ""


Native = Callable[[str], Memory | None]
"""The memory engram itself exported under a PAM id (``get_memory``), or None."""


def conflict(engine: MemoryEngine, row: tables.PamRow, pam_id: str, owner_id: str) -> None:
    """Refuse a document memory whose PAM id another owner (or an unmounted ring) holds."""
    if engine.spec.mount_for(row.ring_id) is None:
        # Another subject's (or an unmounted ring's) PAM memory: said without saying whose.
        raise ConflictError(
            f"memory {pam_id!r}: that PAM id is already held in a ring this caller does "
            "not mount (PAM ids are unique per store)"
        )
    if row.owner_id != owner_id:
        raise ConflictError(
            f"memory {pam_id!r} was imported from owner {row.owner_id!r}; this "
            f"document's owner is {owner_id!r} (PAM ids are unique per store)"
        )


def _plan(
    engine: MemoryEngine, doc: Document, ring: str, ring_id: str, owner_id: str, now: str
) -> Plan:
    return plan_memories(
        engine,
        doc.memories,
        0,
        doc.export_id,
        (ring, ring_id, owner_id, now),
        lambda pam_id: get_memory(engine, pam_id),
    )


def plan_memories(
    engine: MemoryEngine,
    raw: Sequence[JsonObject],
    start: int,
    export_id: str | None,
    where: tuple[str, str, str, str],
    native_of: Native,
) -> Plan:
    """What importing ``raw`` (the document's memories from index ``start``) writes: ``where``
    is (ring, ring id, owner id, now)."""
    ring, ring_id, owner_id, now = where
    memories = [normal_memory(m, f"memories[{start + i}]") for i, m in enumerate(raw)]
    ids = [wire.text(m["id"], "memory id") for m in memories]
    with engine.store.read() as tx:
        existing = tables.rows_by_id(tx, ids)
    plan = Plan([], [], set())
    seat_id = engine.spec.seat.seat_id
    for pam_id, obj in zip(ids, memories, strict=True):
        row = existing.get(pam_id)
        previous = row.memory_id if row is not None else None
        where_ring, where_ring_id = (row.ring, row.ring_id) if row is not None else (ring, ring_id)
        if row is None:
            native = native_of(pam_id)  # a memory engram itself exported
            if native is not None:
                previous, where_ring, where_ring_id = native.id, native.ring, native.ring_id
        else:
            conflict(engine, row, pam_id, owner_id)
        kept = pam_part(obj)  # engram's own member is the engine's to say, on every export
        new_id = memory_id(where_ring_id, kind_of(obj), wire.text(obj["content"], "content"))
        carried = engram_member(obj).get("events")
        decisions = frozenset(
            str(e["decision_id"])
            for e in (carried if isinstance(carried, list) else [])
            if isinstance(e, Mapping) and isinstance(e.get("decision_id"), str)
        )
        if (
            row is not None
            and row.object == kept
            and row.memory_id == new_id
            and decisions <= row.decisions
        ):
            plan.unchanged += 1
            continue
        if row is not None:
            decisions |= row.decisions
        plan.records.append(
            incoming_memory(
                obj,
                ring=where_ring,
                ring_id=where_ring_id,
                memory_id=new_id,
                seat_id=seat_id,
                export_id=export_id,
            )
        )
        plan.rows.append(
            tables.PamRow(
                pam_id=pam_id,
                memory_id=new_id,
                ring=where_ring,
                ring_id=where_ring_id,
                status=wire.text(obj["status"], "status"),
                object=kept,
                decisions=decisions,
                owner_id=owner_id,
                export_id=export_id,
                changed_at=now,
            )
        )
        plan.touched.add(new_id)
        if previous is not None:
            plan.touched.add(previous)
        if row is None and previous is None:
            plan.inserted += 1
        else:
            plan.updated += 1
    return plan


def without_erased(engine: MemoryEngine, plan: Plan) -> Plan:
    """The plan less the memories erased here: neither their memory nor their PAM object (which
    holds the same words) comes back; they are counted as ``erased_here``."""
    with engine.store.read() as tx:
        gone = erased_among(tx, [r.memory_id for r in plan.rows if r.memory_id])
    if not gone:
        return plan
    kept = Plan(
        [r for r in plan.rows if r.memory_id not in gone],
        [r for r in plan.records if _record_id(r) not in gone],
        plan.touched - gone,
    )
    kept.inserted, kept.updated, kept.unchanged = plan.inserted, plan.updated, plan.unchanged
    kept.erased = len([r for r in plan.rows if r.memory_id in gone])
    return kept


def _serve(engine: MemoryEngine, touched: set[str]) -> tuple[int, int]:
    """Withdraw the touched memories no served PAM memory holds; reinstate the others."""
    with engine.store.read() as tx:
        served = tables.served_among(tx, sorted(touched), SERVED_STATUSES)
    # Not held by a served PAM memory: retracted, superseded or archived, or content a PAM
    # memory held before it changed (its new content is another engram memory).
    hide = touched - served
    back = touched & served
    withdrawn = withdraw(engine, hide, "pam: no served PAM memory holds it") if hide else 0
    reinstated = reinstate(engine, back) if back else 0
    return withdrawn, reinstated


def import_pam(
    engine: MemoryEngine,
    document: Json,
    *,
    ring: str = "M4",
    trusted_keys: Collection[PublicKey] = (),
    any_base: bool = False,
) -> PamImport:
    """Check ``document`` whole, then merge it into ``ring`` (a writable mount).

    ``trusted_keys``: when given, the document must be signed by one of them. ``any_base``:
    merge an incremental document whose base export this store has never seen.
    """
    with gc_paused():  # one dict per memory, up to the document's cap (engram.core.bulk)
        return _import_pam(
            engine, document, ring=ring, trusted_keys=trusted_keys, any_base=any_base
        )


def _import_pam(
    engine: MemoryEngine,
    document: Json,
    *,
    ring: str,
    trusted_keys: Collection[PublicKey],
    any_base: bool,
) -> PamImport:
    ring_name, ring_id = writable(engine, ring)
    doc = Document.of(check_schema(document))
    check_contents(doc.whole, known_ids(engine, _references(doc)))
    signature, signer = check_signature(doc.whole, trusted_keys)
    check_base(engine, doc, any_base)
    owner_id, store_owner, now = adopt_owner(engine, doc)
    plan = without_erased(engine, _plan(engine, doc, ring_name, ring_id, owner_id, now))
    if plan.records:
        import_memories(engine.store, plan.records)
    with engine.store.transaction() as tx:
        tables.upsert_rows(tx, plan.rows)
    return finish(engine, doc, plan, (ring_id, owner_id, store_owner, now), signature, signer)


def writable(engine: MemoryEngine, ring: str) -> tuple[str, str]:
    """The ring (its name, its id) a document imports into: a writable mount."""
    tables.migrate(engine.store)
    mount = engine.spec.mount_for(ring)
    if mount is None or not mount.writable:
        raise Forbidden(f"ring {ring!r} is not a writable mount of {engine.spec.seat.seat_id}")
    return mount.ring, mount.ring_id


def adopt_owner(engine: MemoryEngine, doc: Document) -> tuple[str, JsonObject, str]:
    """The document's owner id, the store's owner (the first it met) and the instant."""
    owner = strip_object(doc.owner)
    owner_id = wire.text(owner.get("id"), "owner.id")
    now = engine.now()
    if engine.subject is not None:
        store_owner: JsonObject = {"id": engine.subject}  # never another subject's owner
    else:
        with engine.store.transaction() as tx:
            tables.set_owner(tx, owner, now)  # the first owner a store meets stays its owner
            store_owner = tables.owner(tx) or owner
    return owner_id, store_owner, now


def finish(
    engine: MemoryEngine,
    doc: Document,
    plan: Plan,
    who: tuple[str, str, JsonObject, str],
    signature: str,
    signer: str | None,
) -> PamImport:
    """After the memories: relations, conversations, the export log, recall's view. ``who``
    is (ring id, the document's owner id, the store's owner, now)."""
    ring_id, owner_id, store_owner, now = who
    with engine.store.transaction() as tx:
        relations = tables.upsert_objects(
            tx, "pam_relations", [strip_object(r) for r in doc.relations], now
        )
        conversations = tables.upsert_objects(
            tx, "pam_conversations", [strip_object(c) for c in doc.conversations], now
        )
        registry = doc.whole.get("type_registry")
        if isinstance(registry, str) and engine.subject is None:
            tables.set_type_registry(tx, registry, now)  # exported again (a round trip)
        fresh = True
        if doc.export_id is not None:
            fresh = tables.log_export(
                tx,
                export_id=doc.export_id,
                direction="import",
                export_type=doc.export_type,
                export_date=doc.export_date or now,
                since=doc.since,
                base_export_id=doc.base_export_id,
                owner_id=owner_id,
                checksum=doc.checksum,
                signer=signer,
                now=format_instant_precise(engine.clock.now()),
            )
    withdrawn, reinstated = _serve(engine, plan.touched)
    return PamImport(
        export_id=doc.export_id,
        export_type=doc.export_type,
        owner_id=owner_id,
        store_owner_id=wire.text(store_owner.get("id"), "owner.id"),
        signature=signature,
        signer=signer,
        memories=plan.memories if plan.memories is not None else len(doc.memories),
        inserted=plan.inserted,
        updated=plan.updated,
        unchanged=plan.unchanged,
        withdrawn=withdrawn,
        reinstated=reinstated,
        relations=relations,
        conversations=conversations,
        ring_id=ring_id,
        repeated=not fresh,
        erased=plan.erased,
    )


__all__ = ["PamImport", "import_pam"]
