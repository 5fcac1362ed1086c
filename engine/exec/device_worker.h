// engine/exec/device_worker.h — a device's stream on the host: one thread that runs submitted
// work in submission order. Compute for a device happens only here, so its thread pool has one
// driver. Submitting is thread-safe; wait() on the returned ticket from any other thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

namespace strata::exec {

class DeviceWorker {
 public:
  DeviceWorker();
  ~DeviceWorker();  // finishes queued work, then joins
  DeviceWorker(const DeviceWorker&) = delete;
  DeviceWorker& operator=(const DeviceWorker&) = delete;

  std::future<void> submit(std::function<void()> work);

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<void()>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace strata::exec
