// The sqlite3_module of a read-only virtual table: these callbacks, no
// xUpdate unless given, no transactions; xCreate is xConnect (the tables
// hold nothing of their own to create).
#pragma once

#include <sqlite3.h>

namespace loam::sql {

struct ReadOnlyCallbacks {
  decltype(sqlite3_module::xConnect) connect;
  decltype(sqlite3_module::xBestIndex) best_index;
  decltype(sqlite3_module::xDisconnect) disconnect;
  decltype(sqlite3_module::xOpen) open;
  decltype(sqlite3_module::xClose) close;
  decltype(sqlite3_module::xFilter) filter;
  decltype(sqlite3_module::xNext) next;
  decltype(sqlite3_module::xEof) eof;
  decltype(sqlite3_module::xColumn) column;
  decltype(sqlite3_module::xRowid) rowid;
  decltype(sqlite3_module::xUpdate) update =
      nullptr;  // one that refuses, to stand behind the authorizer
};

inline sqlite3_module ReadOnlyModule(const ReadOnlyCallbacks& f) {
  sqlite3_module m{};
  m.iVersion = 2;
  m.xCreate = f.connect;
  m.xConnect = f.connect;
  m.xBestIndex = f.best_index;
  m.xDisconnect = f.disconnect;
  m.xDestroy = f.disconnect;
  m.xOpen = f.open;
  m.xClose = f.close;
  m.xFilter = f.filter;
  m.xNext = f.next;
  m.xEof = f.eof;
  m.xColumn = f.column;
  m.xRowid = f.rowid;
  m.xUpdate = f.update;
  return m;
}

}  // namespace loam::sql
