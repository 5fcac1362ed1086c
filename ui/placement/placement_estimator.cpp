// ui/placement/placement_estimator.cpp — one estimate request in flight, the latest edit next.
#include "ui/placement/placement_estimator.h"

#include "ui/client/engine_client.h"
#include "ui/placement/placement_model.h"

namespace strata::ui {

PlacementEstimator::PlacementEstimator(EngineClient* client, PlacementModel* model, QObject* parent)
    : QObject(parent), client_(client), model_(model) {
  connect(model_, &PlacementModel::estimateWanted, this, &PlacementEstimator::want);
  // A new engine: the request in flight to the old one never answers (the client drops it).
  connect(client_, &EngineClient::endpointChanged, this, [this] {
    busy_ = false;
    ++serial_;
    refresh();
  });
}

void PlacementEstimator::refresh() { model_->requestEstimate(); }

void PlacementEstimator::want(const QJsonObject& placement) {
  if (busy_ && placement == inFlight_) {
    pending_.reset();  // back to what is being estimated: its answer will do
    return;
  }
  pending_ = placement;
  if (!busy_) sendNext();
}

void PlacementEstimator::sendNext() {
  if (!pending_) return;
  const QJsonObject placement = *pending_;
  pending_.reset();
  if (!client_->hasEndpoint()) {
    model_->setEstimateUnavailable(tr("not connected to an engine"));
    return;
  }
  inFlight_ = placement;
  busy_ = true;
  const quint64 serial = ++serial_;
  ++sent_;
  client_->send("POST", QStringLiteral("/strata/v1/placement/estimate"), placement, this,
                [this, placement, serial](const EngineResult& r) {
                  if (serial != serial_) return;  // sent to an engine that has been replaced since
                  busy_ = false;
                  if (r.ok()) model_->setEngineEstimate(placement, r.object());
                  else if (r.httpStatus == 400) model_->setEstimateRejected(placement, r.error);  // this placement
                  else model_->setEstimateUnavailable(r.error);  // unreachable, no model, timeout
                  sendNext();
                },
                {}, kTimeoutMs);
}

}  // namespace strata::ui
