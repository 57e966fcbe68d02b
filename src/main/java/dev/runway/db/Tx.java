package dev.runway.db;

import dev.runway.metrics.Metrics;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jdbi.v3.core.Handle;

/**
 * A group commit's transaction as each of its writes sees it. DAOs are attached once per
 * transaction and shared by its writes. The hottest inserts (runs and events) go through
 * {@link #batch} instead: plain JDBC, one prepared statement per transaction, and every write's
 * rows sent together just before the commit. At thousands of writes a second, Jdbi's per-call
 * set-up cost more than the database's own work, and on PostgreSQL each statement is a round trip.
 */
public final class Tx implements AutoCloseable {
  private final Handle handle;
  private final Map<Class<?>, Object> daos = new HashMap<>();
  private final Map<String, PreparedStatement> statements = new LinkedHashMap<>();
  private final Map<Object, Object> locals = new HashMap<>();
  private final Outbox outbox;
  private final Metrics metrics;
  private final List<Runnable> afterCommit = new ArrayList<>();
  private final List<Runnable> onCommit = new ArrayList<>();
  private final List<Runnable> onRollback = new ArrayList<>();
  private final java.util.ArrayDeque<Runnable> beforeCommit = new java.util.ArrayDeque<>();

  public Tx(Handle handle) {
    this(handle, Outbox.NONE, Metrics.off());
  }

  public Tx(Handle handle, Outbox outbox, Metrics metrics) {
    this.handle = handle;
    this.outbox = outbox;
    this.metrics = metrics;
  }

  /** Where this transaction's events are published (see {@link Outbox}). */
  public Outbox outbox() {
    return outbox;
  }

  /** What this transaction's writes are counted in, through {@link #afterCommit}. */
  public Metrics metrics() {
    return metrics;
  }

  /**
   * Runs {@code task} once this transaction has committed, before the writers are told; never if it
   * rolls back (a group commit that fails runs its writes again, each in a transaction of its own).
   * For counts that must match what was stored: it must be quick and must not throw.
   */
  public void afterCommit(Runnable task) {
    afterCommit.add(task);
  }

  /**
   * Runs {@code task} on the group commit's thread the moment this transaction has committed, before
   * the next transaction begins (and before {@link #afterCommit}'s tasks); never if it rolls back.
   * For counts that the next transaction must see, such as the webhook dispatcher's places leased
   * by this one: it must be quick, must not block and must not throw.
   */
  public void onCommit(Runnable task) {
    onCommit.add(task);
  }

  /** What {@link #onCommit} asked for. */
  List<Runnable> onCommitTasks() {
    return onCommit;
  }

  /**
   * Runs {@code task} on the group commit's thread if this transaction rolls back (or its commit
   * fails), before the next transaction begins: to give back what {@link #onCommit} would have
   * kept. It must be quick, must not block and must not throw.
   */
  public void onRollback(Runnable task) {
    onRollback.add(task);
  }

  /** What {@link #onRollback} asked for. */
  List<Runnable> onRollbackTasks() {
    return onRollback;
  }

  /** What {@link #afterCommit} asked for, for the group commit to run after the commit. */
  List<Runnable> afterCommitTasks() {
    return afterCommit;
  }

  /**
   * Runs {@code task} after every write of this transaction, before the commit (and before
   * {@link #flush}): for what several writes change together and is best written once, such as a
   * parent run that several of its children tell of their ends. A task may ask for more; they run
   * in the order asked. A task that throws fails the transaction.
   */
  public void beforeCommit(Runnable task) {
    beforeCommit.add(task);
  }

  /** Runs what {@link #beforeCommit} asked for, for the group commit, until nothing more is asked. */
  void runBeforeCommit() {
    for (Runnable task = beforeCommit.poll(); task != null; task = beforeCommit.poll()) {
      task.run();
    }
  }

  /** A value kept for the rest of this transaction under {@code key}, made by {@code make} at the first ask. */
  public <T> T local(Object key, java.util.function.Function<Object, T> make) {
    @SuppressWarnings("unchecked")
    T value = (T) locals.computeIfAbsent(key, make);
    return value;
  }

  /** The transaction's connection, for the few reads written in plain JDBC (see CrmDao). */
  public java.sql.Connection connection() {
    return handle.getConnection();
  }

  public <D> D dao(Class<D> type) {
    return type.cast(daos.computeIfAbsent(type, handle::attach));
  }

  /**
   * The statement to add rows to ({@code addBatch}) for {@code sql}; they are executed at
   * {@link #flush}, before the transaction commits. Only for inserts that nothing in the same
   * transaction reads back.
   */
  public PreparedStatement batch(String sql) {
    PreparedStatement ps = statements.get(sql);
    if (ps == null) {
      try {
        ps = handle.getConnection().prepareStatement(sql);
      } catch (SQLException e) {
        throw new Jdbc.UncheckedSqlException(e);
      }
      statements.put(sql, ps);
    }
    return ps;
  }

  /** Executes the rows added through {@link #batch}, in the order their statements were first asked for. */
  public void flush() {
    try {
      for (PreparedStatement ps : statements.values()) {
        ps.executeBatch();
      }
    } catch (SQLException e) {
      throw new Jdbc.UncheckedSqlException(e);
    }
  }

  @Override
  public void close() {
    for (PreparedStatement ps : statements.values()) {
      try {
        ps.close();
      } catch (SQLException e) {
        // The connection goes back to the pool either way; a broken one is evicted there.
      }
    }
  }
}
