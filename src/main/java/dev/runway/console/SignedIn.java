package dev.runway.console;

/** A signed-in request: its session and account. */
record SignedIn(ConsoleSession session, Account account) {}
