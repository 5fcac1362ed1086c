// ui/app/shared_engine.h — the per-user runtime file through which a second workstation finds the
// engine the first one started: $XDG_RUNTIME_DIR/strata-engine.json (else in the user's data
// folder; mode 0600: it holds the API key), written when that engine is ready and removed when its
// workstation stops it. Qt only.
#pragma once

#include <QString>
#include <QUrl>

struct SharedEngine {
  QUrl url;             // http://127.0.0.1:PORT
  QString apiKey;
  qint64 enginePid = 0;
  qint64 ownerPid = 0;  // the workstation that started the engine and will stop it

  bool isValid() const { return url.isValid() && !url.isEmpty() && ownerPid > 0; }

  static QString filePath();
  // The file's contents; invalid when there is none or it cannot be read.
  static SharedEngine read(QString* error = nullptr);
  // Replaces the file atomically, created with mode 0600. False (and `error`) when it cannot.
  bool write(QString* error = nullptr) const;
  // Removes the file when it names `ownerPid` (another workstation's file is left alone).
  static void removeIfOwnedBy(qint64 ownerPid);
  // True while `pid` is a live process of this user.
  static bool processAlive(qint64 pid);
};
