// Page-aligned host memory, freed on destruction: the host team's workspaces, the host backend's message
// buffers and the kernel tests' buffers. Page alignment keeps every 16-byte packed access aligned whatever the
// offset arithmetic, and the buffers of different ranks on different pages.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

namespace arfit::kernels {

class PageAlignedBuffer {
 public:
  static constexpr std::size_t kPage = 4096;

  PageAlignedBuffer() = default;
  // At least one page: std::aligned_alloc needs a size that is a multiple of the alignment, and 0 bytes would
  // give no distinct address.
  explicit PageAlignedBuffer(std::size_t bytes) {
    void* p = std::aligned_alloc(kPage, (std::max<std::size_t>(bytes, 1) + kPage - 1) / kPage * kPage);
    if (!p) throw std::bad_alloc();
    data_.reset(p);
    size_ = bytes;
  }
  void* data() const { return data_.get(); }
  std::size_t size() const { return size_; }  // the bytes asked for

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> data_;
  std::size_t size_ = 0;
};

}  // namespace arfit::kernels
