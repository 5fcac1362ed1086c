// ui/placement/placement_estimator.h — brings the engine's estimate of the edited placement to the
// placement model: each estimateWanted becomes POST /strata/v1/placement/estimate, at most one in
// flight; edits made meanwhile are coalesced and the latest is sent when the answer comes (so a drag
// that outpaces the engine still gets answers, the last one for where it ends). Answers go to the
// model (setEngineEstimate / setEstimateRejected / setEstimateUnavailable). GUI thread only.
#pragma once

#include <QJsonObject>
#include <QObject>

#include <optional>

class EngineClient;

namespace strata::ui {

class PlacementModel;

class PlacementEstimator : public QObject {
  Q_OBJECT
 public:
  // Neither is owned; both must outlive this object (make it a child of one of them).
  PlacementEstimator(EngineClient* client, PlacementModel* model, QObject* parent = nullptr);

  bool busy() const { return busy_; }         // a request is in flight
  int requestsSent() const { return sent_; }  // since construction
  static constexpr int kTimeoutMs = 10000;    // a request not answered by then: "the engine did not answer"

 public slots:
  // Asks again for the placement shown (the engine became ready, or was replaced).
  void refresh();

 private:
  void want(const QJsonObject& placement);
  void sendNext();

  EngineClient* client_;
  PlacementModel* model_;
  std::optional<QJsonObject> pending_;  // the latest placement wanted while one was in flight
  QJsonObject inFlight_;
  bool busy_ = false;
  quint64 serial_ = 0;  // of the request in flight; answers of an older one are dropped
  int sent_ = 0;
};

}  // namespace strata::ui
