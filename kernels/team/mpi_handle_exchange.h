// HandleExchange over an MPI communicator, for Team::create_ipc. A separate library (arfit_kernels_mpi) so
// that arfit_kernels itself does not link MPI.
#pragma once

#include <mpi.h>

#include "kernels/team.h"

namespace arfit::kernels {

class MpiHandleExchange : public HandleExchange {
 public:
  // `comm` must outlive this object; it is not duplicated or freed.
  explicit MpiHandleExchange(MPI_Comm comm);
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void all_gather(const void* mine, void* all, std::size_t bytes) override;
  void barrier() override;

 private:
  MPI_Comm comm_;
  int rank_ = 0, size_ = 0;
};

}  // namespace arfit::kernels
