package dev.runway.crm;

import dev.runway.db.Jdbc;
import dev.runway.db.Slice;
import dev.runway.db.Tx;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jdbi.v3.sqlobject.config.RegisterConstructorMapper;
import org.jdbi.v3.sqlobject.customizer.Define;
import org.jdbi.v3.sqlobject.statement.SqlQuery;
import org.jdbi.v3.sqlobject.statement.SqlUpdate;

/**
 * CRM records, their change feed, object types and the triggers that listen to them.
 *
 * <p>Pages are ordered by every column of their index, the ones fixed by the WHERE clause too:
 * H2 reads a page in index order, stopping at the LIMIT, only when the ORDER BY is a prefix of the
 * index; ordered by {@code seq} alone it reads and sorts every change after the cursor.
 */
@RegisterConstructorMapper(CrmRecord.class)
@RegisterConstructorMapper(CrmChange.class)
@RegisterConstructorMapper(CrmObjectType.class)
@RegisterConstructorMapper(TriggerRow.class)
@RegisterConstructorMapper(CrmDao.Feed.class)
@RegisterConstructorMapper(CrmDao.Age.class)
public interface CrmDao {
  /**
   * The records of these external ids that exist, by external id; plain JDBC (Jdbi's binding of a
   * list is costly at this size). On H2 the keys are compared as rows: H2 looks up
   * {@code external_id IN (...)} after equalities on the other columns by reading every record of
   * the type, a row IN (...) in the primary key. PostgreSQL plans such a row list as one index scan
   * per row, {@code external_id = ANY (?)} as one (docs/performance.md, CRM). {@code versionsOnly}:
   * read only external_id and version (the rest is left empty).
   */
  static Map<String, CrmRecord> findAll(Connection c, String ws, String type, List<String> ids, boolean versionsOnly) {
    return findAll(c, ws, type, ids, versionsOnly, Long.MAX_VALUE);
  }

  /**
   * As {@link #findAll(Connection, String, String, List, boolean)}, refusing the sync with 413
   * sync_too_large as soon as the properties read pass {@code maxChars}: 1,000 records of 64 KiB
   * are 64 MB, read at once.
   */
  static Map<String, CrmRecord> findAll(Connection c, String ws, String type, List<String> ids, boolean versionsOnly,
      long maxChars) {
    Map<String, CrmRecord> found = new HashMap<>();
    long chars = 0;
    try (PreparedStatement ps = recordsQuery(c, ws, type, ids, versionsOnly ? "external_id, version" : "*")) {
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          if (!versionsOnly) {
            chars += rs.getString("properties").length();
            if (chars > maxChars) {
              throw SyncPlan.tooLarge(maxChars);
            }
          }
          String id = rs.getString("external_id");
          found.put(id, versionsOnly ? new CrmRecord(ws, type, id, null, rs.getInt("version"), false, null, null, null)
              : new CrmRecord(ws, type, id, rs.getString("properties"), rs.getInt("version"), rs.getBoolean("deleted"),
                  Jdbc.getTime(rs, "source_updated_at"), Jdbc.getTime(rs, "created_at"),
                  Jdbc.getTime(rs, "updated_at")));
        }
      }
    } catch (SQLException e) {
      throw new Jdbc.UncheckedSqlException(e);
    }
    return found;
  }

  private static PreparedStatement recordsQuery(Connection c, String ws, String type, List<String> ids, String columns)
      throws SQLException {
    if (c.getMetaData().getDatabaseProductName().equals("PostgreSQL")) {
      PreparedStatement ps = c.prepareStatement("SELECT " + columns + " FROM crm_record WHERE workspace_id = ? "
          + "AND object_type = ? AND external_id = ANY (?)");
      ps.setString(1, ws);
      ps.setString(2, type);
      ps.setArray(3, c.createArrayOf("varchar", ids.toArray()));
      return ps;
    }
    StringBuilder sql = new StringBuilder("SELECT " + columns
        + " FROM crm_record WHERE (workspace_id, object_type, external_id) IN (");
    for (int i = 0; i < ids.size(); i++) {
      sql.append(i == 0 ? "(?, ?, ?)" : ", (?, ?, ?)");
    }
    PreparedStatement ps = c.prepareStatement(sql.append(')').toString());
    for (int i = 0; i < ids.size(); i++) {
      ps.setString(3 * i + 1, ws);
      ps.setString(3 * i + 2, type);
      ps.setString(3 * i + 3, ids.get(i));
    }
    return ps;
  }

  @SqlQuery("SELECT * FROM crm_record WHERE workspace_id = :ws AND object_type = :type AND external_id = :id")
  Optional<CrmRecord> find(String ws, String type, String id);

  /** A page of records by external id, after {@code after} ("" for the first page). */
  @SqlQuery("SELECT * FROM crm_record WHERE workspace_id = :ws AND object_type = :type AND external_id > :after "
      + "<filters> ORDER BY workspace_id, object_type, external_id LIMIT :limit")
  List<CrmRecord> page(String ws, String type, String after, @Define("filters") String filters,
      Instant updatedAfter, int limit);

  /** The sizes of the stored properties of the records {@link #page} would read, in its order. */
  @SqlQuery("SELECT LENGTH(properties) FROM crm_record WHERE workspace_id = :ws AND object_type = :type "
      + "AND external_id > :after <filters> ORDER BY workspace_id, object_type, external_id LIMIT :limit")
  List<Long> pageSizes(String ws, String type, String after, @Define("filters") String filters,
      Instant updatedAfter, int limit);

  /** Up to {@code limit} records after {@code after} whose properties fit in {@code maxBytes} (at least one). */
  default Slice<CrmRecord> page(String ws, String type, String after, Instant updatedAfter, boolean includeDeleted,
      int limit, long maxBytes) {
    String filters = (includeDeleted ? "" : "AND deleted = FALSE ")
        + (updatedAfter == null ? "" : "AND updated_at > :updatedAfter");
    String from = after == null ? "" : after;
    return Slice.within(pageSizes(ws, type, from, filters, updatedAfter, limit + 1), limit, maxBytes,
        rows -> page(ws, type, from, filters, updatedAfter, rows));
  }

  @SqlQuery("SELECT * FROM crm_change WHERE workspace_id = :ws AND object_type = :type AND seq > :after "
      + "ORDER BY workspace_id, object_type, seq LIMIT :limit")
  List<CrmChange> changes(String ws, String type, long after, int limit);

  @SqlQuery("SELECT LENGTH(properties) FROM crm_change WHERE workspace_id = :ws AND object_type = :type "
      + "AND seq > :after ORDER BY workspace_id, object_type, seq LIMIT :limit")
  List<Long> changeSizes(String ws, String type, long after, int limit);

  /** Up to {@code limit} changes after {@code after} whose properties fit in {@code maxBytes} (at least one). */
  default Slice<CrmChange> changes(String ws, String type, long after, int limit, long maxBytes) {
    return Slice.within(changeSizes(ws, type, after, limit + 1), limit, maxBytes,
        rows -> changes(ws, type, after, rows));
  }

  @SqlQuery("SELECT * FROM crm_object_type WHERE workspace_id = :ws AND object_type = :type")
  Optional<CrmObjectType> objectType(String ws, String type);

  @SqlQuery("SELECT * FROM crm_object_type WHERE workspace_id = :ws ORDER BY object_type")
  List<CrmObjectType> objectTypes(String ws);

  @SqlQuery("SELECT COUNT(*) FROM crm_object_type WHERE workspace_id = :ws")
  int countObjectTypes(String ws);

  @SqlUpdate("INSERT INTO crm_object_type (workspace_id, object_type, live_records, deleted_records, pruned_through, "
      + "created_at, updated_at) VALUES (:ws, :type, :live, :deleted, 0, :now, :now)")
  void insertObjectType(String ws, String type, long live, long deleted, Instant now);

  /**
   * Adds to a type's counts of live records and tombstones; false if the workspace has no such
   * type. This and {@link #triggers} run for every sync on the group commit's one writer, in plain
   * JDBC: through the DAO, attaching it and the two statements before them (a look for the type,
   * then its update) took a fifth of the writer's time in bench/crm.py.
   */
  static boolean addToCounts(Connection c, String ws, String type, long live, long deleted, Instant now) {
    try (PreparedStatement ps = c.prepareStatement("UPDATE crm_object_type SET live_records = live_records + ?, "
        + "deleted_records = deleted_records + ?, updated_at = ? WHERE workspace_id = ? AND object_type = ?")) {
      ps.setLong(1, live);
      ps.setLong(2, deleted);
      Jdbc.setTime(ps, 3, now);
      ps.setString(4, ws);
      ps.setString(5, type);
      return ps.executeUpdate() > 0;
    } catch (SQLException e) {
      throw new Jdbc.UncheckedSqlException(e);
    }
  }

  /** The triggers of workflows on a type (see {@link #addToCounts}). */
  static List<TriggerRow> triggers(Connection c, String ws, String type) {
    try (PreparedStatement ps = c.prepareStatement("SELECT workflow_id, object_type, on_created, on_updated, "
        + "on_deleted, project FROM crm_trigger WHERE workspace_id = ? AND object_type = ?")) {
      ps.setString(1, ws);
      ps.setString(2, type);
      List<TriggerRow> out = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(new TriggerRow(rs.getString(1), rs.getString(2), rs.getBoolean(3), rs.getBoolean(4),
              rs.getBoolean(5), rs.getString(6)));
        }
      }
      return out;
    } catch (SQLException e) {
      throw new Jdbc.UncheckedSqlException(e);
    }
  }

  @SqlQuery("SELECT workspace_id, object_type, live_records, deleted_records FROM crm_object_type")
  List<Feed> feeds();

  /** A change feed: one object type of one workspace, with its record counts. */
  record Feed(String workspaceId, String objectType, long liveRecords, long deletedRecords) {}

  /** The seq and time of a feed's oldest changes, oldest first: what pruning looks at. */
  @SqlQuery("SELECT seq, changed_at FROM crm_change WHERE workspace_id = :ws AND object_type = :type "
      + "ORDER BY workspace_id, object_type, seq LIMIT :limit")
  List<Age> oldest(String ws, String type, int limit);

  /** When a change was made. */
  record Age(long seq, Instant changedAt) {}

  /**
   * Removes the tombstones made by deletes among the changes up to {@code through}: those that are
   * still exactly that tombstone (same version), not records deleted, restored and deleted again since.
   */
  @SqlUpdate("DELETE FROM crm_record WHERE workspace_id = :ws AND object_type = :type AND deleted = TRUE "
      + "AND EXISTS (SELECT 1 FROM crm_change c WHERE c.workspace_id = :ws AND c.object_type = :type "
      + "AND c.seq <= :through AND c.change = 'deleted' AND c.external_id = crm_record.external_id "
      + "AND c.version = crm_record.version)")
  int deleteTombstones(String ws, String type, long through);

  @SqlUpdate("DELETE FROM crm_change WHERE workspace_id = :ws AND object_type = :type AND seq <= :through")
  int deleteChanges(String ws, String type, long through);

  @SqlUpdate("UPDATE crm_object_type SET pruned_through = :through, deleted_records = deleted_records - :tombstones "
      + "WHERE workspace_id = :ws AND object_type = :type AND pruned_through < :through")
  int pruned(String ws, String type, long through, long tombstones);

  /** Drops an object type left without records and changes, so that it no longer counts against the limit. */
  @SqlUpdate("DELETE FROM crm_object_type WHERE workspace_id = :ws AND object_type = :type AND live_records = 0 "
      + "AND deleted_records = 0 AND NOT EXISTS (SELECT 1 FROM crm_change WHERE workspace_id = :ws "
      + "AND object_type = :type)")
  int dropIfEmpty(String ws, String type);

  /**
   * Inserts new records and updates stored ones at once (not at commit, as {@link Tx#batch} is
   * meant for): a later write of the same group commit reads them. An update applies only to the
   * version it was worked out from, which the workspace's lock keeps as it was.
   */
  static void write(Tx tx, List<SyncPlan.Write> writes) {
    PreparedStatement insert = tx.batch("INSERT INTO crm_record (properties, version, deleted, source_updated_at, "
        + "created_at, updated_at, workspace_id, object_type, external_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
    PreparedStatement update = tx.batch("UPDATE crm_record SET properties = ?, version = ?, deleted = ?, "
        + "source_updated_at = ?, created_at = ?, updated_at = ? WHERE workspace_id = ? AND object_type = ? "
        + "AND external_id = ? AND version = ?");
    try {
      boolean inserts = false;
      boolean updates = false;
      for (SyncPlan.Write w : writes) {
        PreparedStatement ps = w.previousVersion() == 0 ? insert : update;
        CrmRecord r = w.next();
        ps.setString(1, r.properties());
        ps.setInt(2, r.version());
        ps.setBoolean(3, r.deleted());
        Jdbc.setTime(ps, 4, r.sourceUpdatedAt());
        Jdbc.setTime(ps, 5, r.createdAt());
        Jdbc.setTime(ps, 6, r.updatedAt());
        ps.setString(7, r.workspaceId());
        ps.setString(8, r.objectType());
        ps.setString(9, r.externalId());
        if (w.previousVersion() == 0) {
          inserts = true;
        } else {
          ps.setInt(10, w.previousVersion());
          updates = true;
        }
        ps.addBatch();
      }
      if (inserts) {
        insert.executeBatch();
      }
      if (updates) {
        for (int count : update.executeBatch()) {
          if (count == 0) {
            throw new IllegalStateException("a CRM record changed under its workspace's lock");
          }
        }
      }
    } catch (SQLException e) {
      throw new Jdbc.UncheckedSqlException(e);
    }
    insertChanges(tx, writes);
  }

  /** The writes' changes, stored when the transaction commits (nothing reads them back before). */
  private static void insertChanges(Tx tx, List<SyncPlan.Write> writes) {
    PreparedStatement ps = tx.batch("INSERT INTO crm_change (workspace_id, object_type, external_id, change, version, "
        + "deleted, properties, source_updated_at, created_at, changed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    try {
      for (SyncPlan.Write w : writes) {
        CrmRecord r = w.next();
        ps.setString(1, r.workspaceId());
        ps.setString(2, r.objectType());
        ps.setString(3, r.externalId());
        ps.setString(4, w.change());
        ps.setInt(5, r.version());
        ps.setBoolean(6, r.deleted());
        ps.setString(7, r.properties());
        Jdbc.setTime(ps, 8, r.sourceUpdatedAt());
        Jdbc.setTime(ps, 9, r.createdAt());
        Jdbc.setTime(ps, 10, r.updatedAt());
        ps.addBatch();
      }
    } catch (SQLException e) {
      throw new Jdbc.UncheckedSqlException(e);
    }
  }
}
